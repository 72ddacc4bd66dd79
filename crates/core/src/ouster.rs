//! Ouster lidar depth frames as points: the intrinsics of `lidar.json` (as the collector
//! saves ouster-sdk's `SensorInfo`) and the per-pixel lookup table that turns a range image
//! into x, y, z in the sensor frame.
//!
//! The math is upstream's `roverd.transforms.ouster` (a numpy port of ouster-sdk's `XYZLut`,
//! after "Lidar Range Data to Cartesian Coordinates" in the Ouster user guide). For beam `b`
//! and column `c` of a frame `w` columns wide:
//!
//! - encoder angle `θ = 2π (1 - c / w)`, beam azimuth `a = θ - azimuth_offset[b]`,
//!   altitude `φ = altitude[b]` (degrees in the file);
//! - direction `d = (cos φ cos a, cos φ sin a, sin φ)`, beam origin
//!   `o = (bx cos θ, bx sin θ, bz)` with `bx`, `bz` the translation of
//!   `beam_to_lidar_transform` and `n = hypot(bx, bz)`;
//! - in the lidar frame (mm) `p = (r - n) d + o`; in the sensor frame (m)
//!   `R (p / 1000) + t / 1000` with `R`, `t` from `lidar_to_sensor_transform`.
//!
//! That is affine in the range `r`, so [`XyzLut`] keeps one direction and one offset per pixel
//! (`r D + O`, in f64) and a frame costs one multiply-add per coordinate. Pixels of range 0
//! (no return) are the origin. Like upstream (and ouster-sdk's `XYZLut`), the table applies to
//! the frame as stored, staggered: each column is one measurement instant. [`destagger`]
//! aligns the columns for image views, as upstream's `Destagger`.
//!
//! Which points are kept is upstream's `PointCloud` rule: with a minimum range, those whose
//! float32 norm is at least that far; without one, those that are not the origin. A NaN or
//! infinite range (float frames) is no point: upstream drops points with a NaN coordinate,
//! and its matrix product with the rotation (whose zeros meet the infinity) makes one of
//! every infinite range. Points come
//! beam by beam, column by column.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, LidarProblem, Result};

/// The largest `lidar.json` we read (real ones are tens of KiB).
pub const MAX_LIDAR_JSON_BYTES: u64 = 16 << 20;
/// The most beams we accept (Ouster sensors have up to 128).
pub const MAX_BEAMS: usize = 1024;
/// The most columns we accept (Ouster modes go up to 4096).
pub const MAX_COLUMNS: usize = 16384;
/// The most pixels per frame (beams x columns) we accept: the table takes 48 bytes a pixel.
/// Ouster's largest frame is 128 x 4096 = 524288.
pub const MAX_PIXELS: usize = 1 << 21;

/// The parts of an Ouster `lidar.json` the projection needs.
#[derive(Debug, Clone, PartialEq)]
pub struct LidarIntrinsics {
    /// Beams (rows of a frame).
    pub pixels_per_column: usize,
    /// Measurements per rotation (columns of a frame).
    pub columns_per_frame: usize,
    /// Per-beam stagger, in columns.
    pub pixel_shift_by_row: Vec<i64>,
    /// Per-beam altitude, degrees.
    pub beam_altitude_angles: Vec<f64>,
    /// Per-beam azimuth offset, degrees.
    pub beam_azimuth_angles: Vec<f64>,
    /// 4x4, row-major: beam origin to lidar frame (translation in mm).
    pub beam_to_lidar_transform: [f64; 16],
    /// 4x4, row-major: lidar frame to sensor frame (translation in mm).
    pub lidar_to_sensor_transform: [f64; 16],
    /// The file it was read from (or the name given to [`LidarIntrinsics::parse`]), for
    /// errors.
    pub source: PathBuf,
}

impl LidarIntrinsics {
    /// Reads and parses `path` (at most [`MAX_LIDAR_JSON_BYTES`]).
    pub fn open(path: &Path) -> Result<LidarIntrinsics> {
        let len = std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .len();
        if len > MAX_LIDAR_JSON_BYTES {
            return Err(Error::TooLarge {
                what: path.display().to_string(),
                got: len,
                limit: MAX_LIDAR_JSON_BYTES,
            });
        }
        let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        LidarIntrinsics::parse(path, &text)
    }

    /// Parses the text of a `lidar.json`; `source` names it in errors.
    pub fn parse(source: &Path, text: &[u8]) -> Result<LidarIntrinsics> {
        let doc: Value = serde_json::from_slice(text).map_err(|e| Error::Json {
            path: source.to_path_buf(),
            error: e,
        })?;
        from_value(source, &doc).map_err(|problem| Error::Lidar {
            path: source.to_path_buf(),
            problem,
        })
    }

    /// Pixels in one frame (`beams x columns`).
    pub fn pixels(&self) -> usize {
        self.pixels_per_column * self.columns_per_frame
    }

    /// An error for a frame of `got` pixels.
    fn frame_size(&self, got: usize) -> Error {
        Error::Lidar {
            path: self.source.clone(),
            problem: LidarProblem::FrameSize {
                got,
                beams: self.pixels_per_column,
                columns: self.columns_per_frame,
            },
        }
    }
}

fn from_value(source: &Path, doc: &Value) -> std::result::Result<LidarIntrinsics, LidarProblem> {
    let beams = uint(doc, "lidar_data_format", "pixels_per_column", MAX_BEAMS)?;
    let columns = uint(
        doc,
        "lidar_data_format",
        "columns_per_frame",
        MAX_COLUMNS.min(MAX_PIXELS / beams),
    )?;
    let shifts = array(doc, "lidar_data_format", "pixel_shift_by_row", beams)?;
    let max = columns as i64;
    let pixel_shift_by_row = shifts
        .iter()
        .map(|v| {
            let key = "lidar_data_format.pixel_shift_by_row";
            let n = v.as_i64().ok_or(LidarProblem::NotA {
                key: key.into(),
                expected: "an array of integers",
            })?;
            if !(-max..=max).contains(&n) {
                return Err(LidarProblem::OutOfRange {
                    key: key.into(),
                    value: n,
                    min: -max,
                    max,
                });
            }
            Ok(n)
        })
        .collect::<std::result::Result<Vec<i64>, _>>()?;
    let floats = |section: &str, key: &str, len: usize| {
        let values = array(doc, section, key, len)?;
        let dotted = format!("{section}.{key}");
        values
            .iter()
            .enumerate()
            .map(|(index, v)| match v.as_f64() {
                Some(x) if x.is_finite() => Ok(x),
                Some(_) => Err(LidarProblem::NotFinite {
                    key: dotted.clone(),
                    index,
                }),
                None => Err(LidarProblem::NotA {
                    key: dotted.clone(),
                    expected: "an array of numbers",
                }),
            })
            .collect::<std::result::Result<Vec<f64>, _>>()
    };
    let matrix = |section: &str, key: &str| -> std::result::Result<[f64; 16], LidarProblem> {
        let v = floats(section, key, 16)?;
        Ok(v.try_into().expect("length checked"))
    };
    Ok(LidarIntrinsics {
        pixels_per_column: beams,
        columns_per_frame: columns,
        pixel_shift_by_row,
        beam_altitude_angles: floats("beam_intrinsics", "beam_altitude_angles", beams)?,
        beam_azimuth_angles: floats("beam_intrinsics", "beam_azimuth_angles", beams)?,
        beam_to_lidar_transform: matrix("beam_intrinsics", "beam_to_lidar_transform")?,
        lidar_to_sensor_transform: matrix("lidar_intrinsics", "lidar_to_sensor_transform")?,
        source: source.to_path_buf(),
    })
}

fn get<'a>(
    doc: &'a Value,
    section: &str,
    key: &str,
) -> std::result::Result<&'a Value, LidarProblem> {
    let dotted = || format!("{section}.{key}");
    let s = doc.get(section).ok_or_else(|| LidarProblem::Missing {
        key: section.into(),
    })?;
    if !s.is_object() {
        return Err(LidarProblem::NotA {
            key: section.into(),
            expected: "an object",
        });
    }
    s.get(key)
        .ok_or_else(|| LidarProblem::Missing { key: dotted() })
}

fn uint(
    doc: &Value,
    section: &str,
    key: &str,
    max: usize,
) -> std::result::Result<usize, LidarProblem> {
    let dotted = format!("{section}.{key}");
    let v = get(doc, section, key)?;
    let n = v.as_i64().ok_or(LidarProblem::NotA {
        key: dotted.clone(),
        expected: "an integer",
    })?;
    if n < 1 || n > max as i64 {
        return Err(LidarProblem::OutOfRange {
            key: dotted,
            value: n,
            min: 1,
            max: max as i64,
        });
    }
    Ok(n as usize)
}

fn array<'a>(
    doc: &'a Value,
    section: &str,
    key: &str,
    len: usize,
) -> std::result::Result<&'a Vec<Value>, LidarProblem> {
    let dotted = format!("{section}.{key}");
    let a = get(doc, section, key)?
        .as_array()
        .ok_or(LidarProblem::NotA {
            key: dotted.clone(),
            expected: "an array",
        })?;
    if a.len() != len {
        return Err(LidarProblem::Length {
            key: dotted,
            got: a.len(),
            expected: len,
        });
    }
    Ok(a)
}

/// A frame with each beam's row rotated by its `pixel_shift_by_row`, so that one column is
/// one azimuth: `out[h][w] = frame[h][(w - shift[h]) mod columns]` (upstream's `Destagger`).
pub fn destagger<T: Copy>(intrinsics: &LidarIntrinsics, frame: &[T]) -> Result<Vec<T>> {
    if frame.len() != intrinsics.pixels() {
        return Err(intrinsics.frame_size(frame.len()));
    }
    let w = intrinsics.columns_per_frame;
    let mut out = Vec::with_capacity(frame.len());
    for (row, &shift) in frame.chunks_exact(w).zip(&intrinsics.pixel_shift_by_row) {
        // The shift is within -w..=w (checked at parse), so this is in 0..w.
        let s = (shift.rem_euclid(w as i64)) as usize;
        // out[c] = row[(c - s) mod w]: the row's last `s` entries, then its first `w - s`.
        out.extend_from_slice(&row[w - s..]);
        out.extend_from_slice(&row[..w - s]);
    }
    Ok(out)
}

/// The geometry shared by the table and the per-pixel reference: per-beam and per-column
/// angles and the two transforms, in upstream's arithmetic.
struct Geometry {
    /// Per column: encoder angle.
    theta: Vec<f64>,
    /// Per beam: altitude and azimuth offset, radians.
    alt: Vec<f64>,
    az_off: Vec<f64>,
    bx: f64,
    bz: f64,
    beam_r: f64,
    /// Rotation rows and translation (m) of `lidar_to_sensor_transform`.
    rot: [[f64; 3]; 3],
    trans: [f64; 3],
}

impl Geometry {
    fn new(i: &LidarIntrinsics) -> Geometry {
        let w = i.columns_per_frame;
        // numpy's deg2rad multiplies by pi/180.
        let rad = |d: &f64| d * (std::f64::consts::PI / 180.0);
        let blt = &i.beam_to_lidar_transform;
        let lts = &i.lidar_to_sensor_transform;
        let (bx, bz) = (blt[3], blt[11]);
        Geometry {
            theta: (0..w)
                .map(|c| 2.0 * std::f64::consts::PI * (1.0 - c as f64 / w as f64))
                .collect(),
            alt: i.beam_altitude_angles.iter().map(rad).collect(),
            az_off: i.beam_azimuth_angles.iter().map(rad).collect(),
            bx,
            bz,
            beam_r: bx.hypot(bz),
            rot: [
                [lts[0], lts[1], lts[2]],
                [lts[4], lts[5], lts[6]],
                [lts[8], lts[9], lts[10]],
            ],
            trans: [lts[3] * 1e-3, lts[7] * 1e-3, lts[11] * 1e-3],
        }
    }

    /// Direction cosines and beam origin (mm) of pixel `(b, c)` in the lidar frame.
    fn ray(&self, b: usize, c: usize) -> ([f64; 3], [f64; 3]) {
        let theta = self.theta[c];
        let az = theta - self.az_off[b];
        let phi = self.alt[b];
        (
            [phi.cos() * az.cos(), phi.cos() * az.sin(), phi.sin()],
            [self.bx * theta.cos(), self.bx * theta.sin(), self.bz],
        )
    }

    fn rotate(&self, v: [f64; 3]) -> [f64; 3] {
        let r = &self.rot;
        [
            r[0][0] * v[0] + r[0][1] * v[1] + r[0][2] * v[2],
            r[1][0] * v[0] + r[1][1] * v[1] + r[1][2] * v[2],
            r[2][0] * v[0] + r[2][1] * v[1] + r[2][2] * v[2],
        ]
    }
}

/// Upstream's `PointCloud` selection: at least `min_range` away (float32 norm, summed in
/// numpy's order), or, without a minimum, anything but the origin.
#[inline]
fn keep(p: [f32; 3], min_range: Option<f32>) -> bool {
    match min_range {
        Some(m) => ((p[0] * p[0] + p[1] * p[1]) + p[2] * p[2]).sqrt() >= m,
        None => p != [0.0; 3],
    }
}

/// The per-pixel table for one `lidar.json`: built once, then any number of frames are
/// projected with it.
#[derive(Debug, Clone)]
pub struct XyzLut {
    beams: usize,
    columns: usize,
    /// Per pixel: `R d / 1000` (sensor frame, m per mm of range).
    dir: Vec<[f64; 3]>,
    /// Per pixel: `R (o - n d) / 1000 + t` (m).
    off: Vec<[f64; 3]>,
    source: PathBuf,
}

impl XyzLut {
    /// The table for `intrinsics`.
    pub fn new(intrinsics: &LidarIntrinsics) -> XyzLut {
        let g = Geometry::new(intrinsics);
        let (beams, columns) = (intrinsics.pixels_per_column, intrinsics.columns_per_frame);
        let mut dir = Vec::with_capacity(beams * columns);
        let mut off = Vec::with_capacity(beams * columns);
        for b in 0..beams {
            for c in 0..columns {
                let (d, o) = g.ray(b, c);
                let rd = g.rotate(d);
                let ro = g.rotate([
                    o[0] - g.beam_r * d[0],
                    o[1] - g.beam_r * d[1],
                    o[2] - g.beam_r * d[2],
                ]);
                dir.push([rd[0] * 1e-3, rd[1] * 1e-3, rd[2] * 1e-3]);
                off.push([
                    ro[0] * 1e-3 + g.trans[0],
                    ro[1] * 1e-3 + g.trans[1],
                    ro[2] * 1e-3 + g.trans[2],
                ]);
            }
        }
        XyzLut {
            beams,
            columns,
            dir,
            off,
            source: intrinsics.source.clone(),
        }
    }

    /// `(beams, columns)` of the frames it projects.
    pub fn shape(&self) -> (usize, usize) {
        (self.beams, self.columns)
    }

    /// Pixels in a frame (beams x columns).
    pub fn pixels(&self) -> usize {
        self.dir.len()
    }

    /// Appends the kept points of the range frame `rng` (mm, staggered as stored, row-major
    /// `beams x columns`) to `out`, in the sensor frame (m). See the module doc for which are
    /// kept.
    pub fn project<T: Copy + Into<f64>>(
        &self,
        rng: &[T],
        min_range: Option<f32>,
        out: &mut Vec<[f32; 3]>,
    ) -> Result<()> {
        out.reserve(rng.len());
        self.project_with(rng, min_range, |p| out.push(p))
    }

    /// [`XyzLut::project`] handing each kept point to `emit`, in the same order (e.g. to
    /// write it straight into a message).
    pub fn project_with<T: Copy + Into<f64>>(
        &self,
        rng: &[T],
        min_range: Option<f32>,
        mut emit: impl FnMut([f32; 3]),
    ) -> Result<()> {
        if rng.len() != self.dir.len() {
            return Err(Error::Lidar {
                path: self.source.clone(),
                problem: LidarProblem::FrameSize {
                    got: rng.len(),
                    beams: self.beams,
                    columns: self.columns,
                },
            });
        }
        for ((&r, d), o) in rng.iter().zip(&self.dir).zip(&self.off) {
            let r: f64 = r.into();
            if !r.is_finite() {
                continue;
            }
            let p = if r == 0.0 {
                [0.0; 3]
            } else {
                [
                    (r * d[0] + o[0]) as f32,
                    (r * d[1] + o[1]) as f32,
                    (r * d[2] + o[2]) as f32,
                ]
            };
            if keep(p, min_range) {
                emit(p);
            }
        }
        Ok(())
    }
}

/// The same points as [`XyzLut::project`], computed pixel by pixel in upstream's order of
/// operations (trigonometry per pixel, no table): the reference the table is tested and
/// benchmarked against.
pub fn project_direct<T: Copy + Into<f64>>(
    intrinsics: &LidarIntrinsics,
    rng: &[T],
    min_range: Option<f32>,
    out: &mut Vec<[f32; 3]>,
) -> Result<()> {
    if rng.len() != intrinsics.pixels() {
        return Err(intrinsics.frame_size(rng.len()));
    }
    let g = Geometry::new(intrinsics);
    let w = intrinsics.columns_per_frame;
    for (i, &r) in rng.iter().enumerate() {
        let r: f64 = r.into();
        if !r.is_finite() {
            continue;
        }
        let (d, o) = g.ray(i / w, i % w);
        let lidar = [
            ((r - g.beam_r) * d[0] + o[0]) * 1e-3,
            ((r - g.beam_r) * d[1] + o[1]) * 1e-3,
            ((r - g.beam_r) * d[2] + o[2]) * 1e-3,
        ];
        let s = g.rotate(lidar);
        let p = if r == 0.0 {
            [0.0; 3]
        } else {
            [
                (s[0] + g.trans[0]) as f32,
                (s[1] + g.trans[1]) as f32,
                (s[2] + g.trans[2]) as f32,
            ]
        };
        if keep(p, min_range) {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "ouster_tests.rs"]
mod tests;
