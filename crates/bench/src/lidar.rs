//! Realistic lidar frames for benches and tests: what red-rover's Ouster writes per frame
//! (`rng` u2 range in millimetres, `nir` u2 ambient photons, `rfl` u1 reflectivity, one
//! `rows x cols` image each), ray-cast from a small street scene instead of filled with noise
//! or a constant, because an `.xz` encoder's speed and ratio depend on the data: smooth
//! surfaces (ground, facades), edges (cars, poles, window recesses, the sky with no return),
//! a few bits of sensor noise and some dropouts.
//!
//! Deterministic: frame `index` is the scene seen after driving `index` metres (10 m/s at
//! 10 Hz), so consecutive frames differ like a real drive's.

use serde_json::{json, Value};

/// The `lidar.json` a current-firmware Ouster gives for a `beams x columns` scanner (what
/// red-rover's collector saves beside the lidar channels), in ouster-sdk's nested layout
/// (`sensor_info`, `config_params`, `lidar_data_format`, `beam_intrinsics`,
/// `lidar_intrinsics`, `imu_intrinsics`): what upstream roverd's Ouster transforms and
/// roverlog's `LidarIntrinsics` read. An OS1's altitudes over +-22.5 degrees, the azimuth
/// offsets and stagger of four beam columns (the stagger scaled to the columns: +-72 at
/// 2048), the beam origin 15.806 mm off the axis, the sensor frame flipped about z and lifted.
pub fn ouster_metadata(beams: usize, columns: usize) -> Value {
    let span = (beams - 1).max(1) as f64;
    let alt: Vec<f64> = (0..beams)
        .map(|b| 22.5 - 45.0 * (b as f64 / span).powf(1.05))
        .collect();
    let az: Vec<f64> = (0..beams)
        .map(|b| [4.23, 1.41, -1.41, -4.23][b % 4] + 0.01 * (b / 4) as f64)
        .collect();
    let shift: Vec<i64> = (0..beams)
        .map(|b| [72, 24, -24, -72][b % 4] * columns as i64 / 2048)
        .collect();
    json!({
        "sensor_info": {"prod_line": format!("OS-1-{beams}"), "prod_sn": "992109000000",
                        "build_rev": "v2.3.0", "status": "RUNNING"},
        "config_params": {"lidar_mode": format!("{columns}x10"), "udp_port_lidar": 7502},
        "lidar_data_format": {
            "pixels_per_column": beams,
            "columns_per_frame": columns,
            "columns_per_packet": 16,
            "pixel_shift_by_row": shift,
            "column_window": [0, columns - 1],
            "udp_profile_lidar": "RNG19_RFL8_SIG16_NIR16",
            "fps": 10,
        },
        "beam_intrinsics": {
            "beam_altitude_angles": alt,
            "beam_azimuth_angles": az,
            "beam_to_lidar_transform": [1, 0, 0, 15.806, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
            "lidar_origin_to_beam_origin_mm": 15.806,
        },
        "lidar_intrinsics": {
            "lidar_to_sensor_transform": [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1],
        },
        "imu_intrinsics": {
            "imu_to_sensor_transform": [1, 0, 0, 6.253, 0, 1, 0, -11.775, 0, 0, 1, 7.645, 0, 0, 0, 1],
        },
    })
}

/// One frame's three channels, little-endian, row-major `rows x cols`.
#[derive(Debug, Clone, PartialEq)]
pub struct LidarFrame {
    /// `u2`: range in millimetres, 0 = no return.
    pub rng: Vec<u8>,
    /// `u2`: near-infrared ambient photons.
    pub nir: Vec<u8>,
    /// `u1`: reflectivity.
    pub rfl: Vec<u8>,
}

impl LidarFrame {
    /// The channels in red-rover's order with their numpy type codes:
    /// `(name, type, bytes)`.
    pub fn channels(&self) -> [(&'static str, &'static str, &[u8]); 3] {
        [
            ("rfl", "u1", &self.rfl),
            ("nir", "u2", &self.nir),
            ("rng", "u2", &self.rng),
        ]
    }
}

/// The rig's lidar image: 128 beams x 2048 columns.
pub const RIG_SHAPE: (usize, usize) = (128, 2048);

/// The sensor's height above the ground, metres.
const HEIGHT: f64 = 1.8;
/// Farthest return, metres (what a u2 in millimetres holds).
const MAX_RANGE: f64 = 65.0;

/// What a ray hits: distance, reflectivity, and the cosine of the incidence angle.
struct Hit {
    t: f64,
    rfl: f64,
    cos: f64,
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Roughly normal (sum of four uniforms), mean 0, deviation ~1.
    fn normal(&mut self) -> f64 {
        (self.unit() + self.unit() + self.unit() + self.unit() - 2.0) * 1.732
    }
}

/// An axis-aligned box (a parked car), in world x (along the street) and y (across).
struct Car {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    top: f64,
    rfl: f64,
}

/// Frame `index` of a `rows x cols` lidar.
pub fn lidar_frame(rows: usize, cols: usize, index: u64) -> LidarFrame {
    let pos = index as f64; // metres driven
    let mut rng = Rng(index.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5eed);
    // Parked cars along both kerbs: fixed in the world, seen moving past.
    let mut cars = Vec::new();
    let mut world = Rng(7);
    for side in [-1.0f64, 1.0] {
        let mut x = -80.0;
        while x < 400.0 {
            x += 5.0 + 12.0 * world.unit();
            let (y0, y1) = if side > 0.0 { (4.6, 6.4) } else { (-6.4, -4.6) };
            cars.push(Car {
                x0: x - pos,
                x1: x + 4.4 - pos,
                y0,
                y1,
                top: -HEIGHT + 1.4 + 0.3 * world.unit(),
                rfl: 15.0 + 80.0 * world.unit(),
            });
            x += 4.4;
        }
    }
    // Only those within reach can be hit.
    cars.retain(|c| c.x1 > -MAX_RANGE && c.x0 < MAX_RANGE);
    let mut out = LidarFrame {
        rng: Vec::with_capacity(rows * cols * 2),
        nir: Vec::with_capacity(rows * cols * 2),
        rfl: Vec::with_capacity(rows * cols),
    };
    for r in 0..rows {
        // Beams from +22.5 degrees (row 0) down to -22.5.
        let elev = (22.5 - 45.0 * r as f64 / (rows.max(2) - 1) as f64).to_radians();
        let (sz, cz) = elev.sin_cos();
        for c in 0..cols {
            let az = std::f64::consts::TAU * c as f64 / cols as f64;
            let (dx, dy, dz) = (cz * az.cos(), cz * az.sin(), sz);
            let hit = cast(dx, dy, dz, pos, &cars);
            let sky = 2600.0 + 900.0 * sz.max(0.0);
            let (range_mm, nir, rfl) = match hit {
                Some(h) if h.t < MAX_RANGE && rng.unit() > 0.004 => {
                    // A few bits of range noise, more far away and at grazing angles.
                    let sigma = 6.0 + 0.25 * h.t + 8.0 * (1.0 - h.cos);
                    let mm = (h.t * 1000.0 + sigma * rng.normal()).clamp(1.0, 65535.0);
                    let ambient = 300.0 + 12.0 * h.rfl * h.cos;
                    let nir = ambient + ambient.sqrt() * rng.normal();
                    let rfl = h.rfl + 1.5 * rng.normal();
                    (
                        mm as u16,
                        nir.clamp(0.0, 65535.0) as u16,
                        rfl.clamp(0.0, 255.0) as u8,
                    )
                }
                _ => {
                    let nir = if dz > 0.0 {
                        sky + sky.sqrt() * rng.normal()
                    } else {
                        0.0
                    };
                    (0, nir.clamp(0.0, 65535.0) as u16, 0)
                }
            };
            out.rng.extend_from_slice(&range_mm.to_le_bytes());
            out.nir.extend_from_slice(&nir.to_le_bytes());
            out.rfl.push(rfl);
        }
    }
    out
}

/// The nearest surface along the ray from the sensor (origin, `HEIGHT` above the ground)
/// with direction `(dx, dy, dz)`, in a street driven `pos` metres along.
fn cast(dx: f64, dy: f64, dz: f64, pos: f64, cars: &[Car]) -> Option<Hit> {
    let mut best: Option<Hit> = None;
    let mut take = |h: Hit| {
        if h.t > 0.3 && best.as_ref().is_none_or(|b| h.t < b.t) {
            best = Some(h);
        }
    };
    // Asphalt, with painted lane markings.
    if dz < -1e-6 {
        let t = -HEIGHT / dz;
        let (x, y) = (t * dx + pos, t * dy);
        let paint = (y.abs() - 1.7).abs() < 0.08 && x.rem_euclid(9.0) < 3.0;
        take(Hit {
            t,
            rfl: if paint { 120.0 } else { 12.0 },
            cos: -dz,
        });
    }
    // Facades on both sides, 14 m high, windows recessed 0.25 m, a side street every 60 m.
    for (wall, sign) in [(9.0f64, 1.0f64), (-10.5, -1.0)] {
        if dy * sign <= 1e-6 {
            continue;
        }
        let t0 = wall / dy;
        let (x, z) = (t0 * dx + pos, t0 * dz + HEIGHT);
        if !(0.0..14.0).contains(&z) || x.rem_euclid(60.0) < 9.0 {
            continue;
        }
        let window = x.rem_euclid(3.0) > 1.0 && z.rem_euclid(3.2) > 1.0;
        let t = if window {
            (wall + 0.25 * sign) / dy
        } else {
            t0
        };
        take(Hit {
            t,
            rfl: if window { 6.0 } else { 55.0 },
            cos: (dy * sign).abs(),
        });
    }
    // Lamp posts every 25 m on both kerbs: thin vertical cylinders.
    for (py, off) in [(7.2f64, 0.0f64), (-8.2, 12.5)] {
        let k = ((pos - off) / 25.0).floor();
        for n in 0..4 {
            let px = (k + n as f64) * 25.0 + off - pos;
            // Closest approach of the ray (in the ground plane) to the post's axis.
            let h2 = dx * dx + dy * dy;
            if h2 < 1e-9 {
                continue;
            }
            let tc = (px * dx + py * dy) / h2;
            let (cx, cy) = (tc * dx - px, tc * dy - py);
            let d2 = cx * cx + cy * cy;
            if d2 < 0.15 * 0.15 {
                let t = tc - ((0.15 * 0.15 - d2) / h2).sqrt();
                if (t * dz + HEIGHT) < 6.0 {
                    take(Hit {
                        t,
                        rfl: 70.0,
                        cos: (1.0 - d2 / (0.15 * 0.15)).sqrt(),
                    });
                }
            }
        }
    }
    // Cars: the slab method on each box, skipping those far behind or ahead.
    for car in cars {
        let (mut tmin, mut tmax, mut axis) = (0.0f64, f64::INFINITY, 0);
        for (k, (d, lo, hi)) in [
            (dx, car.x0, car.x1),
            (dy, car.y0, car.y1),
            (dz, -HEIGHT, car.top),
        ]
        .into_iter()
        .enumerate()
        {
            if d.abs() < 1e-9 {
                if !(lo..=hi).contains(&0.0) {
                    tmax = -1.0;
                }
                continue;
            }
            let (a, b) = ((lo / d).min(hi / d), (lo / d).max(hi / d));
            if a > tmin {
                tmin = a;
                axis = k;
            }
            tmax = tmax.min(b);
        }
        if tmin <= tmax && tmin > 0.0 {
            let cos = [dx, dy, dz][axis].abs();
            take(Hit {
                t: tmin,
                rfl: car.rfl,
                cos,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Structured, not noise and not constant: most pixels return, values vary, and
    /// neighbours are close far more often than not.
    #[test]
    fn frames_have_structure_and_noise() {
        let f = lidar_frame(64, 512, 3);
        let rng: Vec<u16> = f
            .rng
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        let returns = rng.iter().filter(|&&v| v > 0).count();
        assert!(returns > rng.len() / 2, "{returns} of {} return", rng.len());
        let distinct: std::collections::BTreeSet<_> = rng.iter().collect();
        assert!(distinct.len() > 1000, "{} distinct ranges", distinct.len());
        let smooth = rng
            .windows(2)
            .filter(|w| w[0] > 0 && w[1] > 0 && w[0].abs_diff(w[1]) < 200)
            .count();
        // Noise over the u16 range would have under 1% of neighbours within 200 mm; the street
        // has about three quarters (74%: facades' and cars' edges and dropouts are the rest).
        assert!(
            smooth > returns / 2,
            "{smooth} smooth neighbours of {returns} returns"
        );
        assert_ne!(f, lidar_frame(64, 512, 4), "consecutive frames differ");
        assert_eq!(f, lidar_frame(64, 512, 3), "deterministic");
    }
}
