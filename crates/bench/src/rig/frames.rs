//! The rig's samples, synthesised once: structured content, not noise, so that compression and
//! JPEG cost what they cost on real frames.
//!
//! - camera: a street scene (sky gradient, buildings with window grids, a road with lane
//!   marks, cars with wheels, signs with rows of glyphs) with mild sensor noise, JPEG at
//!   quality 90: 150-400 KB at 1920x1080;
//! - lidar: range, reflectivity and ambient images of a ground plane, walls, cars and poles
//!   seen by a 128-beam, 2048-column scanner: smooth surfaces, edges, no-return sky, and a few
//!   bits of noise;
//! - radar: beat-frequency sinusoids of a few targets over ADC noise;
//! - imu: slowly varying orientation, gravity plus vibration, small angular velocity.
//!
//! [`write_pool`] writes every pool sample of every channel to `<dir>/<sensor>/<k>.<channel>`
//! (the camera's raw RGB pixels to `<k>.rgb` too, for writers that encode themselves, as
//! upstream's video channel does), the collector's `lidar.json`, and the manifest `rig.json`.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{Dims, Stream, STREAMS};
use crate::error::{Error, Result};

/// The manifest's file name in the frames directory.
pub const MANIFEST: &str = "rig.json";
/// The JPEG quality of camera frames.
pub const JPEG_QUALITY: u8 = 90;

/// The file of pool sample `k` of `channel`.
pub fn sample_path(dir: &Path, stream: Stream, k: usize, channel: &str) -> PathBuf {
    dir.join(stream.name()).join(format!("{k}.{channel}"))
}

/// The raw RGB pixels of camera pool sample `k`.
pub fn pixels_path(dir: &Path, k: usize) -> PathBuf {
    dir.join(Stream::Camera.name()).join(format!("{k}.rgb"))
}

/// What [`write_pool`] made, for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolSummary {
    /// Mean bytes of a camera JPEG frame.
    pub jpeg_mean: u64,
    pub jpeg_min: u64,
    pub jpeg_max: u64,
    /// Raw bytes over `.xz` preset 0 bytes of the lidar pool's three channels.
    pub lidar_ratio: f64,
}

/// Makes every stream's pool under `dir` and writes the manifest.
pub fn write_pool(dir: &Path, dims: &Dims) -> Result<PoolSummary> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| Error::io(&p, e)
    };
    let write = |p: &Path, b: &[u8]| std::fs::write(p, b).map_err(io(p));
    let mut streams = serde_json::Map::new();
    let (mut jpeg, mut raw_lidar, mut xz_lidar) = (Vec::new(), 0usize, 0usize);
    for stream in STREAMS {
        let sdir = dir.join(stream.name());
        std::fs::create_dir_all(&sdir).map_err(io(&sdir))?;
        let meta = stream.meta(dims);
        let mut channels = Vec::new();
        for (name, m) in &meta.channels {
            channels.push(json!({
                "name": name, "format": m.format.as_str(), "type": m.dtype.code(),
                "shape": m.shape, "desc": m.desc,
                "files": (0..stream.pool())
                    .map(|k| sample_path(Path::new(""), stream, k, name))
                    .collect::<Vec<_>>(),
            }));
        }
        for k in 0..stream.pool() {
            let samples = match stream {
                Stream::Camera => {
                    let (h, w) = dims.camera;
                    let rgb = camera_image(w, h, k as u64);
                    let jpg = encode_jpeg(&rgb, w, h)?;
                    jpeg.push(jpg.len() as u64);
                    write(&pixels_path(dir, k), &rgb)?;
                    vec![jpg]
                }
                Stream::Lidar => {
                    let s = lidar_frame(dims.lidar.0, dims.lidar.1, k as u64);
                    for c in &s {
                        raw_lidar += c.len();
                        xz_lidar += roverlog_core::format::lzma::compress(c, 0).len();
                    }
                    s
                }
                Stream::Radar => vec![radar_frame(&dims.radar, k as u64), vec![1]],
                Stream::Imu => imu_sample(k as u64),
            };
            for ((name, _), bytes) in meta.channels.iter().zip(&samples) {
                write(&sample_path(dir, stream, k, name), bytes)?;
            }
        }
        let mut entry = json!({
            "sensor": stream.name(), "hz": stream.hz(), "pool": stream.pool(),
            "channels": channels, "sidecars": stream.sidecars(),
        });
        if stream == Stream::Camera {
            entry["pixels"] = json!((0..stream.pool())
                .map(|k| pixels_path(Path::new(""), k))
                .collect::<Vec<_>>());
        }
        for name in stream.sidecars() {
            write(&sdir.join(name), &lidar_json(dims))?;
        }
        streams.insert(stream.name().into(), entry);
    }
    let manifest = json!({"dims": {"camera": dims.camera, "lidar": dims.lidar, "radar": dims.radar},
                          "streams": streams});
    let path = dir.join(MANIFEST);
    write(
        &path,
        &serde_json::to_vec_pretty(&manifest).expect("manifest json"),
    )?;
    Ok(PoolSummary {
        jpeg_mean: jpeg.iter().sum::<u64>() / jpeg.len().max(1) as u64,
        jpeg_min: jpeg.iter().copied().min().unwrap_or(0),
        jpeg_max: jpeg.iter().copied().max().unwrap_or(0),
        lidar_ratio: raw_lidar as f64 / xz_lidar.max(1) as f64,
    })
}

/// A deterministic hash of a position, for texture and noise.
fn hash(mut x: u64) -> u64 {
    // splitmix64's finaliser
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Uniform in `[0, 1)` from a hash.
fn unit(x: u64) -> f64 {
    (hash(x) >> 11) as f64 / (1u64 << 53) as f64
}

/// Triangular noise in `(-amp, amp)`: the sum of two uniforms, like a sensor's.
fn noise(x: u64, amp: f64) -> f64 {
    (unit(x) + unit(x ^ 0x5555_5555) - 1.0) * amp
}

/// An RGB image with rectangles, circles and gradients drawn on it.
struct Canvas {
    w: usize,
    h: usize,
    px: Vec<u8>,
}

impl Canvas {
    fn rect(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, c: [u8; 3]) {
        let cl = |v: f64, max: usize| (v.max(0.0) as usize).min(max);
        let (x0, x1) = (cl(x0, self.w), cl(x1, self.w));
        let (y0, y1) = (cl(y0, self.h), cl(y1, self.h));
        for y in y0..y1 {
            for x in x0..x1 {
                self.px[(y * self.w + x) * 3..][..3].copy_from_slice(&c);
            }
        }
    }

    fn circle(&mut self, cx: f64, cy: f64, r: f64, c: [u8; 3]) {
        let y0 = (cy - r).max(0.0) as usize;
        let y1 = ((cy + r) as usize + 1).min(self.h);
        for y in y0..y1 {
            let dy = y as f64 - cy;
            let half = (r * r - dy * dy).max(0.0).sqrt();
            self.rect(cx - half, y as f64, cx + half, y as f64 + 1.0, c);
        }
    }

    /// Vertical gradient from `top` to `bottom` over rows `y0..y1`.
    fn gradient(&mut self, y0: usize, y1: usize, top: [f64; 3], bottom: [f64; 3]) {
        for y in y0..y1.min(self.h) {
            let t = (y - y0) as f64 / (y1 - y0).max(1) as f64;
            let c: [u8; 3] = std::array::from_fn(|i| (top[i] + (bottom[i] - top[i]) * t) as u8);
            self.rect(0.0, y as f64, self.w as f64, y as f64 + 1.0, c);
        }
    }
}

/// A street scene of `w` x `h` RGB pixels; `k` moves the camera along the street.
pub fn camera_image(w: usize, h: usize, k: u64) -> Vec<u8> {
    let mut c = Canvas {
        w,
        h,
        px: vec![0; w * h * 3],
    };
    let (wf, hf) = (w as f64, h as f64);
    let horizon = (hf * 0.45) as usize;
    c.gradient(0, horizon, [70.0, 120.0, 200.0], [190.0, 210.0, 235.0]);
    c.gradient(horizon, h, [120.0, 125.0, 100.0], [80.0, 95.0, 60.0]);
    // The road: a trapezoid to the vanishing point, lane dashes on it.
    let vx = wf * 0.5;
    for y in horizon..h {
        let t = (y - horizon) as f64 / (hf - horizon as f64);
        let half = wf * 0.03 + wf * 0.5 * t;
        let g = 85.0 + 20.0 * t;
        c.rect(
            vx - half,
            y as f64,
            vx + half,
            y as f64 + 1.0,
            [g as u8, g as u8, (g + 5.0) as u8],
        );
        // Dashes move towards the camera from frame to frame.
        if (((t * 12.0).powf(0.6) * 6.0 + k as f64 * 0.7) as u64).is_multiple_of(2) {
            let lw = 1.0 + wf * 0.006 * t;
            c.rect(vx - lw, y as f64, vx + lw, y as f64 + 1.0, [235, 235, 220]);
        }
    }
    // Buildings on both sides, with window grids; their positions drift with k.
    let shift = k as f64 * wf / 40.0;
    for b in 0..14u64 {
        let seed = b * 7919;
        let left = b % 2 == 0;
        let bw = wf * (0.05 + 0.06 * unit(seed + 1));
        let bh = hf * (0.15 + 0.3 * unit(seed + 2));
        let along = (b / 2) as f64 * wf * 0.075 + unit(seed + 3) * wf * 0.03;
        let x = if left {
            along - shift * 0.5
        } else {
            wf - along - bw + shift * 0.5
        };
        let base = horizon as f64 + hf * 0.05;
        let col: [u8; 3] =
            std::array::from_fn(|i| (90.0 + 120.0 * unit(seed + 4 + i as u64)) as u8);
        c.rect(x, base - bh, x + bw, base, col);
        let (nx, ny) = (
            3 + (unit(seed + 8) * 5.0) as usize,
            4 + (unit(seed + 9) * 8.0) as usize,
        );
        let (cw, ch) = (bw / nx as f64, bh / ny as f64);
        for i in 0..nx {
            for j in 0..ny {
                let lit = unit(seed * 31 + (i * 17 + j) as u64) > 0.7;
                let wc = if lit { [230, 210, 140] } else { [40, 50, 70] };
                let (wx, wy) = (x + i as f64 * cw, base - bh + j as f64 * ch);
                c.rect(
                    wx + cw * 0.2,
                    wy + ch * 0.2,
                    wx + cw * 0.8,
                    wy + ch * 0.75,
                    wc,
                );
            }
        }
    }
    // Cars: bodies, windows, wheels.
    for car in 0..4u64 {
        let seed = 1000 + car * 13 + k;
        let cw = wf * (0.08 + 0.05 * unit(seed));
        let cx = wf * (0.2 + 0.6 * unit(seed + 1));
        let cy = hf * (0.62 + 0.25 * unit(seed + 2));
        let col: [u8; 3] =
            std::array::from_fn(|i| (40.0 + 200.0 * unit(seed + 3 + i as u64)) as u8);
        c.rect(cx, cy - cw * 0.35, cx + cw, cy, col);
        c.rect(
            cx + cw * 0.2,
            cy - cw * 0.55,
            cx + cw * 0.8,
            cy - cw * 0.3,
            [60, 80, 100],
        );
        for wx in [0.22, 0.78] {
            c.circle(cx + cw * wx, cy, cw * 0.11, [20, 20, 20]);
            c.circle(cx + cw * wx, cy, cw * 0.05, [150, 150, 150]);
        }
    }
    // Signs with rows of glyphs: text-like edges.
    for s in 0..5u64 {
        let seed = 5000 + s * 101;
        let sw = wf * (0.06 + 0.06 * unit(seed));
        let sh = sw * 0.5;
        let sx = wf * (0.05 + 0.85 * unit(seed + 1)) - shift * 0.3;
        let sy = hf * (0.1 + 0.25 * unit(seed + 2));
        c.rect(sx, sy, sx + sw, sy + sh, [240, 240, 235]);
        let gs = (wf / 640.0).max(1.0); // glyph pixel
        let rows = ((sh - 4.0 * gs) / (9.0 * gs)).max(0.0) as usize;
        let per_row = ((sw - 4.0 * gs) / (6.0 * gs)).max(0.0) as usize;
        for r in 0..rows {
            for g in 0..per_row {
                let bits = hash(seed * 977 + (r * 131 + g) as u64);
                for p in 0..35 {
                    if bits >> p & 1 == 1 && (g % 6 != 5) {
                        let (px, py) = ((p % 5) as f64, (p / 5) as f64);
                        let x = sx + 2.0 * gs + (g as f64 * 6.0 + px) * gs;
                        let y = sy + 2.0 * gs + (r as f64 * 9.0 + py) * gs;
                        c.rect(x, y, x + gs, y + gs, [20, 20, 30]);
                    }
                }
            }
        }
    }
    // The sun, and mild sensor noise over everything.
    c.circle(wf * 0.85, hf * 0.1, hf * 0.04, [255, 250, 220]);
    for (i, v) in c.px.iter_mut().enumerate() {
        *v = (*v as f64 + noise(i as u64 ^ (k << 40), 3.5)).clamp(0.0, 255.0) as u8;
    }
    c.px
}

/// JPEG of RGB pixels at [`JPEG_QUALITY`].
pub fn encode_jpeg(rgb: &[u8], w: usize, h: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
        .encode(rgb, w as u32, h as u32, image::ColorType::Rgb8)
        .map_err(|error| Error::Encode {
            width: w,
            height: h,
            error,
        })?;
    Ok(out)
}

/// A vertical surface seen by the lidar from above (x forward, y left, metres): a wall, a
/// car's side, a pole, as a segment on the ground with a height.
struct Surface {
    from: (f64, f64),
    to: (f64, f64),
    /// Top above the ground, m.
    top: f64,
    /// Reflectivity, 0-255.
    rfl: f64,
}

impl Surface {
    /// Where a ray from the sensor at azimuth `az` meets it: the horizontal distance.
    fn hit(&self, az: f64) -> Option<f64> {
        let (ux, uy) = (az.cos(), az.sin());
        let (dx, dy) = (self.to.0 - self.from.0, self.to.1 - self.from.1);
        let den = ux * dy - uy * dx;
        if den.abs() < 1e-12 {
            return None;
        }
        let t = (self.from.0 * dy - self.from.1 * dx) / den;
        let s = (self.from.0 * uy - self.from.1 * ux) / den;
        (t > 0.0 && (0.0..=1.0).contains(&s)).then_some(t)
    }
}

const LIDAR_HEIGHT: f64 = 1.8;
const LIDAR_MAX_RANGE: f64 = 120.0;

/// `rfl` u1, `nir` u2, `rng` u2 images of `rows` x `cols` (little-endian), scan `k`.
pub fn lidar_frame(rows: usize, cols: usize, k: u64) -> Vec<Vec<u8>> {
    use std::f64::consts::TAU;
    let moved = k as f64 * 0.5; // m driven since scan 0
    let mut surfaces = Vec::new();
    // Building fronts along both sides of the street, with gaps between them, and one
    // across its end.
    for i in 0..28u64 {
        let side = if i % 2 == 0 { 1.0 } else { -1.0 };
        let x0 = (i / 2) as f64 * 10.0 - 60.0 - moved + 3.0 * unit(i * 5);
        let y = side * (7.0 + 3.0 * unit(i * 5 + 1));
        surfaces.push(Surface {
            from: (x0, y),
            to: (x0 + 6.0 + 3.0 * unit(i * 5 + 2), y),
            top: 6.0 + 14.0 * unit(i * 5 + 3),
            rfl: 40.0 + 50.0 * unit(i * 5 + 4),
        });
    }
    surfaces.push(Surface {
        from: (80.0 - moved, -15.0),
        to: (80.0 - moved, 15.0),
        top: 25.0,
        rfl: 60.0,
    });
    // Parked cars along the kerbs and poles beside them.
    for i in 0..12u64 {
        let side = if i % 2 == 0 { 1.0 } else { -1.0 };
        let x0 = (i / 2) as f64 * 8.0 - 20.0 - moved + 2.0 * unit(300 + i);
        let car = i % 4 != 3;
        let (len, y, top, rfl) = if car {
            (4.5, side * 3.0, 1.5, 120.0)
        } else {
            (0.25, side * 4.5, 4.5, 200.0)
        };
        surfaces.push(Surface {
            from: (x0, y),
            to: (x0 + len, y),
            top,
            rfl,
        });
    }
    let sun = 1.1 + k as f64 * 0.002;
    let (mut rfl, mut nir, mut rng) = (
        Vec::with_capacity(rows * cols),
        Vec::with_capacity(rows * cols * 2),
        Vec::with_capacity(rows * cols * 2),
    );
    // Per column: the vertical surfaces it crosses, nearest first (horizontal distance, top,
    // reflectivity).
    let columns: Vec<Vec<(f64, f64, f64)>> = (0..cols)
        .map(|c| {
            let az = TAU * c as f64 / cols as f64;
            let mut v: Vec<_> = surfaces
                .iter()
                .filter_map(|s| Some((s.hit(az)?, s.top, s.rfl)))
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        })
        .collect();
    for r in 0..rows {
        let elev = (22.5 - 45.0 * r as f64 / (rows - 1).max(1) as f64).to_radians();
        for (c, col) in columns.iter().enumerate() {
            let az = TAU * c as f64 / cols as f64;
            let at = (k << 40) ^ ((r * cols + c) as u64);
            // Where the beam ends: a surface whose height it meets, the ground, or nothing.
            let wall = col.iter().copied().find(|(hd, top, _)| {
                let z = hd * elev.tan();
                z >= -LIDAR_HEIGHT && z <= top - LIDAR_HEIGHT
            });
            let ground = (elev < 0.0).then(|| LIDAR_HEIGHT / (-elev).tan());
            let hit = match (wall, ground) {
                (Some(w), Some(g)) if g < w.0 => Some((g, 12.0 + 6.0 * (g * 0.7).sin())),
                (Some(w), _) => Some((w.0, w.2)),
                (None, Some(g)) => Some((g, 12.0 + 6.0 * (g * 0.7).sin())),
                (None, None) => None,
            };
            let hit = hit
                .map(|(hd, refl)| (hd / elev.cos(), refl))
                .filter(|(range, _)| *range < LIDAR_MAX_RANGE);
            let (range_mm, refl, ambient) = match hit {
                Some((range, refl)) => (
                    (range * 1000.0 + noise(at, 12.0)).clamp(1.0, 65535.0),
                    (refl + noise(at ^ 1, 3.0)).clamp(1.0, 255.0),
                    300.0 + refl * 5.0 / (1.0 + range * 0.05) + noise(at ^ 2, 20.0),
                ),
                None => (
                    0.0,
                    0.0,
                    1800.0 + 900.0 * (az - sun).cos() + 200.0 * elev + noise(at ^ 3, 40.0),
                ),
            };
            rfl.push(refl as u8);
            nir.extend_from_slice(&(ambient.clamp(0.0, 65535.0) as u16).to_le_bytes());
            rng.extend_from_slice(&(range_mm as u16).to_le_bytes());
        }
    }
    vec![rfl, nir, rng]
}

/// Radar `iq` i2 samples (little-endian) of `shape` = chirps, tx, rx, ADC samples: a few
/// targets' beat tones, phase-shifted across chirps and antennas, over ADC noise.
pub fn radar_frame(shape: &[usize; 4], k: u64) -> Vec<u8> {
    use std::f64::consts::TAU;
    let [chirps, tx, rx, n] = *shape;
    let targets: Vec<(f64, f64, f64, f64)> = (0..4u64)
        .map(|t| {
            (
                0.02 + 0.4 * unit(t * 5 + k),   // beat frequency, cycles per sample
                0.05 * (unit(t * 5 + 1) - 0.5), // doppler, cycles per chirp
                TAU * unit(t * 5 + 2),          // angle phase step per antenna
                400.0 + 1500.0 * unit(t * 5 + 3),
            )
        })
        .collect();
    let mut out = Vec::with_capacity(chirps * tx * rx * n * 2);
    let mut at = k << 40;
    for c in 0..chirps {
        for a in 0..tx * rx {
            for s in 0..n {
                let mut v = noise(at, 60.0);
                for (f, dop, ang, amp) in &targets {
                    v += amp * (TAU * (f * s as f64 + dop * c as f64) + ang * a as f64).cos();
                }
                out.extend_from_slice(&(v.clamp(-32768.0, 32767.0) as i16).to_le_bytes());
                at += 1;
            }
        }
    }
    out
}

/// IMU sample `k` (100 Hz): `rot`, `acc`, `avel`, each three f4 (little-endian).
pub fn imu_sample(k: u64) -> Vec<Vec<u8>> {
    let t = k as f64 / 100.0;
    let f4 =
        |v: [f64; 3]| -> Vec<u8> { v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect() };
    vec![
        f4([
            0.02 * (t * 0.7).sin(),
            0.01 * (t * 1.3).cos(),
            1.2 + 0.3 * (t * 0.1).sin(),
        ]),
        f4([
            0.3 * (t * 2.0).sin() + noise(k, 0.05),
            0.1 * (t * 3.0).cos() + noise(k ^ 1, 0.05),
            9.81 + noise(k ^ 2, 0.1),
        ]),
        f4([
            noise(k ^ 3, 0.01),
            noise(k ^ 4, 0.01),
            0.03 * (t * 0.1).cos(),
        ]),
    ]
}

/// The `lidar.json` of the scanner [`lidar_frame`] models, as a current-firmware Ouster
/// gives it (what the collector copies from the sensor at the start of a capture; see
/// [`crate::lidar::ouster_metadata`]).
pub fn lidar_json(dims: &Dims) -> Vec<u8> {
    let (rows, cols) = dims.lidar;
    serde_json::to_vec_pretty(&crate::lidar::ouster_metadata(rows, cols)).expect("lidar.json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn lidar_images_are_structured_and_compress() {
        let (rows, cols) = (32, 512);
        let f = lidar_frame(rows, cols, 0);
        assert_eq!(
            f.iter().map(Vec::len).collect::<Vec<_>>(),
            [rows * cols, rows * cols * 2, rows * cols * 2]
        );
        let rng: Vec<u16> = f[2]
            .chunks(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        // Sky (no return) in the upper beams, ground returns in the lower ones.
        assert!(rng[..cols].iter().filter(|&&r| r == 0).count() > cols / 4);
        assert!(rng[(rows - 1) * cols..]
            .iter()
            .all(|&r| r > 1000 && r < 10_000));
        // Not noise: .xz preset 0 finds structure in every channel.
        for c in &f {
            let packed = roverlog_core::format::lzma::compress(c, 0).len();
            assert!(packed * 3 < c.len() * 2, "{packed} of {}", c.len());
        }
        assert_ne!(lidar_frame(rows, cols, 1), f, "scans differ");
    }

    #[test]
    fn camera_frames_are_scenes_not_noise() {
        let (w, h) = (320, 240);
        let a = camera_image(w, h, 0);
        assert_eq!(a.len(), w * h * 3);
        let jpg = encode_jpeg(&a, w, h).unwrap();
        assert_eq!(&jpg[..2], &[0xff, 0xd8]);
        // Random pixels at quality 90 take more than half their raw size; a scene far less.
        assert!(jpg.len() * 6 < a.len(), "{} of {}", jpg.len(), a.len());
        assert!(
            jpg.len() * 40 > a.len(),
            "{} of {}: too flat",
            jpg.len(),
            a.len()
        );
        assert_ne!(camera_image(w, h, 1), a);
    }

    #[test]
    fn radar_and_imu_samples_have_their_sizes() {
        assert_eq!(radar_frame(&[4, 3, 4, 16], 0).len(), 4 * 3 * 4 * 16 * 2);
        let imu = imu_sample(5);
        assert_eq!(imu.iter().map(Vec::len).collect::<Vec<_>>(), [12, 12, 12]);
        let v: Value = serde_json::from_slice(&lidar_json(&Dims::TINY)).unwrap();
        assert_eq!(v["lidar_data_format"]["pixels_per_column"], 16);
        // The layout the Ouster readers take (upstream roverd's and core's).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lidar.json");
        std::fs::write(&path, lidar_json(&Dims::TINY)).unwrap();
        let i = roverlog_core::ouster::LidarIntrinsics::open(&path).unwrap();
        assert_eq!((i.pixels_per_column, i.columns_per_frame), Dims::TINY.lidar);
    }

    #[test]
    fn the_pool_and_its_manifest_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = write_pool(dir.path(), &Dims::TINY).unwrap();
        assert!(s.jpeg_min > 0 && s.lidar_ratio > 1.0, "{s:?}");
        let m: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(MANIFEST)).unwrap()).unwrap();
        for stream in STREAMS {
            let e = &m["streams"][stream.name()];
            assert_eq!(e["hz"], stream.hz());
            for ch in e["channels"].as_array().unwrap() {
                for f in ch["files"].as_array().unwrap() {
                    assert!(dir.path().join(f.as_str().unwrap()).is_file(), "{f}");
                }
            }
        }
        assert!(dir.path().join("lidar/lidar.json").is_file());
        assert!(pixels_path(dir.path(), 5).is_file());
    }
}
