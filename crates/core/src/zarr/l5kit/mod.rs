//! L5Kit datasets: a zarr group with `scenes`, `frames`, `agents` and (in newer datasets)
//! `traffic_light_faces`, read into plain Rust structs.
//!
//! Fields are looked up by name in each array's dtype (not by fixed offsets), so a dataset
//! whose arrays carry extra fields still reads. Intervals (`frame_index_interval`, ...) are
//! `[start, end)` row ranges into the next array; they are checked against its length.
//! Reads go in bulk: one slice decodes each chunk once, unlike row-by-row access.

mod source;

pub use source::L5KitSource;

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::array::{Rows, ZarrArray};
use super::dtype::{DType, ScalarKind};
use super::meta::GroupMeta;
use super::values::utf32_str;
use super::zerr;
use crate::error::{Result, ZarrProblem};

/// One scene: a run of frames recorded by one host.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub frame_index_interval: [i64; 2],
    pub host: String,
    /// Nanoseconds since the epoch.
    pub start_time: i64,
    pub end_time: i64,
}

/// One frame: the ego pose at a timestamp and the agents / light faces seen then.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Nanoseconds since the epoch.
    pub timestamp: i64,
    pub agent_index_interval: [i64; 2],
    /// `[0, 0]` in datasets without traffic light faces.
    pub traffic_light_faces_index_interval: [i64; 2],
    pub ego_translation: [f64; 3],
    /// Row-major 3x3 rotation matrix.
    pub ego_rotation: [[f64; 3]; 3],
}

/// One observed agent in one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub centroid: [f64; 2],
    pub extent: [f32; 3],
    pub yaw: f32,
    pub velocity: [f32; 2],
    pub track_id: u64,
    /// One probability per label in the group's `labels` attribute (17 in the public data).
    pub label_probabilities: Vec<f32>,
}

/// The state of one traffic light face (bulb) in one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficLightFace {
    pub face_id: String,
    pub traffic_light_id: String,
    /// Probabilities of active / inactive / unknown.
    pub traffic_light_face_status: Vec<f32>,
}

/// An opened L5Kit dataset (l5kit's `ChunkedDataset`).
#[derive(Debug)]
pub struct ChunkedDataset {
    path: PathBuf,
    pub scenes: ZarrArray,
    pub frames: ZarrArray,
    pub agents: ZarrArray,
    /// `None` for older datasets that predate traffic light faces.
    pub traffic_light_faces: Option<ZarrArray>,
}

impl ChunkedDataset {
    /// Opens the zarr group at `path` and its L5Kit arrays.
    pub fn open(path: impl AsRef<Path>) -> Result<ChunkedDataset> {
        let path = path.as_ref().to_path_buf();
        GroupMeta::read(&path)?;
        let open = |name: &str| ZarrArray::open(path.join(name));
        let tl = path.join("traffic_light_faces");
        let ds = ChunkedDataset {
            scenes: open("scenes")?,
            frames: open("frames")?,
            agents: open("agents")?,
            traffic_light_faces: if tl.join(".zarray").exists() {
                Some(ZarrArray::open(&tl)?)
            } else {
                None
            },
            path,
        };
        for (arr, fields) in [
            (
                &ds.scenes,
                &["frame_index_interval", "host", "start_time", "end_time"][..],
            ),
            (
                &ds.frames,
                &[
                    "timestamp",
                    "agent_index_interval",
                    "ego_translation",
                    "ego_rotation",
                ],
            ),
            (
                &ds.agents,
                &[
                    "centroid",
                    "extent",
                    "yaw",
                    "velocity",
                    "track_id",
                    "label_probabilities",
                ],
            ),
        ] {
            for f in fields {
                if arr.dtype().find_field(f).is_none() {
                    return Err(zerr(
                        arr.path(),
                        ZarrProblem::NotL5Kit {
                            field: f.to_string(),
                        },
                    ));
                }
            }
        }
        Ok(ds)
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Scenes in `range`.
    pub fn scenes(&self, range: Range<u64>) -> Result<Vec<Scene>> {
        let rows = self.scenes.read_records(range)?;
        let r = RowReader::new(&rows, self.scenes.path())?;
        let (fi, host, st, et) = (
            r.field("frame_index_interval")?,
            r.field("host")?,
            r.field("start_time")?,
            r.field("end_time")?,
        );
        Ok(r.rows()
            .map(|row| Scene {
                frame_index_interval: i64s(row, fi),
                host: utf32_str(&row[host.0..host.0 + host.1]),
                start_time: i64s::<1>(row, st)[0],
                end_time: i64s::<1>(row, et)[0],
            })
            .collect())
    }

    /// Frames in `range`.
    pub fn frames(&self, range: Range<u64>) -> Result<Vec<Frame>> {
        let rows = self.frames.read_records(range)?;
        let r = RowReader::new(&rows, self.frames.path())?;
        let ts = r.field("timestamp")?;
        let ai = r.field("agent_index_interval")?;
        let ti = r.field_opt("traffic_light_faces_index_interval");
        let tr = r.field("ego_translation")?;
        let rot = r.field("ego_rotation")?;
        Ok(r.rows()
            .map(|row| {
                let m = f64s::<9>(row, rot);
                Frame {
                    timestamp: i64s::<1>(row, ts)[0],
                    agent_index_interval: i64s(row, ai),
                    traffic_light_faces_index_interval: ti.map_or([0, 0], |ti| i64s(row, ti)),
                    ego_translation: f64s(row, tr),
                    ego_rotation: [[m[0], m[1], m[2]], [m[3], m[4], m[5]], [m[6], m[7], m[8]]],
                }
            })
            .collect())
    }

    /// Agents in `range`.
    pub fn agents(&self, range: Range<u64>) -> Result<Vec<Agent>> {
        let rows = self.agents.read_records(range)?;
        let r = RowReader::new(&rows, self.agents.path())?;
        let (c, e, y, v, t, l) = (
            r.field("centroid")?,
            r.field("extent")?,
            r.field("yaw")?,
            r.field("velocity")?,
            r.field("track_id")?,
            r.field("label_probabilities")?,
        );
        Ok(r.rows()
            .map(|row| Agent {
                centroid: f64s(row, c),
                extent: f32s(row, e),
                yaw: f32s::<1>(row, y)[0],
                velocity: f32s(row, v),
                track_id: u64::from_le_bytes(row[t.0..t.0 + 8].try_into().unwrap()),
                label_probabilities: f32_vec(&row[l.0..l.0 + l.1]),
            })
            .collect())
    }

    /// Traffic light faces in `range` (empty when the dataset has none and `range` is empty).
    pub fn traffic_light_faces(&self, range: Range<u64>) -> Result<Vec<TrafficLightFace>> {
        let Some(arr) = &self.traffic_light_faces else {
            if range.is_empty() {
                return Ok(Vec::new());
            }
            return Err(zerr(&self.path, ZarrProblem::NoTrafficLightFaces));
        };
        let rows = arr.read_records(range)?;
        let r = RowReader::new(&rows, arr.path())?;
        let (f, t, s) = (
            r.field("face_id")?,
            r.field("traffic_light_id")?,
            r.field("traffic_light_face_status")?,
        );
        Ok(r.rows()
            .map(|row| TrafficLightFace {
                face_id: utf32_str(&row[f.0..f.0 + f.1]),
                traffic_light_id: utf32_str(&row[t.0..t.0 + t.1]),
                traffic_light_face_status: f32_vec(&row[s.0..s.0 + s.1]),
            })
            .collect())
    }

    /// The frames of `scene`.
    pub fn frames_of_scene(&self, scene: &Scene) -> Result<Vec<Frame>> {
        self.frames(interval(scene.frame_index_interval, &self.frames)?)
    }

    /// The agents seen in `frame`.
    pub fn agents_of_frame(&self, frame: &Frame) -> Result<Vec<Agent>> {
        self.agents(interval(frame.agent_index_interval, &self.agents)?)
    }

    /// The traffic light faces seen in `frame`.
    pub fn traffic_light_faces_of_frame(&self, frame: &Frame) -> Result<Vec<TrafficLightFace>> {
        let iv = frame.traffic_light_faces_index_interval;
        match &self.traffic_light_faces {
            Some(arr) => self.traffic_light_faces(interval(iv, arr)?),
            None if iv[0] == iv[1] => Ok(Vec::new()),
            None => Err(zerr(&self.path, ZarrProblem::NoTrafficLightFaces)),
        }
    }
}

/// Checks a `[start, end)` interval against the array it points into.
fn interval(iv: [i64; 2], arr: &ZarrArray) -> Result<Range<u64>> {
    let (a, b) = (iv[0], iv[1]);
    if a < 0 || b < a || b as u64 > arr.len() {
        return Err(zerr(
            arr.path(),
            ZarrProblem::IntervalOutOfRange {
                start: a,
                end: b,
                rows: arr.len(),
            },
        ));
    }
    Ok(a as u64..b as u64)
}

/// (offset, byte length) of a field in a row.
type Loc = (usize, usize);

struct RowReader<'a> {
    rows: &'a Rows,
    path: &'a Path,
}

impl<'a> RowReader<'a> {
    fn new(rows: &'a Rows, path: &'a Path) -> Result<Self> {
        if rows.row_elems != 1 {
            return Err(zerr(path, ZarrProblem::L5KitNotOneDim));
        }
        Ok(RowReader { rows, path })
    }

    fn field_opt(&self, name: &str) -> Option<Loc> {
        let (off, dt, shape) = self.rows.dtype.find_field(name)?;
        let n: usize = shape.iter().product();
        Some((off, n * dt.itemsize()))
    }

    /// Locates a field, checking its element type and count are what L5Kit writes
    /// (count 0: any; size 0: any).
    fn field(&self, name: &str) -> Result<Loc> {
        use ScalarKind::{Float, Int, UInt, Unicode};
        let (kind, size, count) = match name {
            "frame_index_interval" | "agent_index_interval" => (Int, 8, 2),
            "traffic_light_faces_index_interval" => (Int, 8, 2),
            "timestamp" | "start_time" | "end_time" => (Int, 8, 1),
            "centroid" => (Float, 8, 2),
            "ego_translation" => (Float, 8, 3),
            "ego_rotation" => (Float, 8, 9),
            "extent" => (Float, 4, 3),
            "yaw" => (Float, 4, 1),
            "velocity" => (Float, 4, 2),
            "track_id" => (UInt, 8, 1),
            "label_probabilities" | "traffic_light_face_status" => (Float, 4, 0),
            _ => (Unicode, 0, 1),
        };
        let (off, dt, shape) = self.rows.dtype.find_field(name).ok_or_else(|| {
            zerr(
                self.path,
                ZarrProblem::NoField {
                    name: name.to_string(),
                },
            )
        })?;
        let n: usize = shape.iter().product();
        let ok = match dt {
            DType::Scalar(s) => {
                s.kind == kind && (size == 0 || s.size == size) && (count == 0 || n == count)
            }
            DType::Struct { .. } => false,
        };
        if !ok {
            return Err(zerr(
                self.path,
                ZarrProblem::FieldNotL5Kit {
                    name: name.to_string(),
                    dtype: super::dtype::numpy_str_shaped(dt, &shape),
                },
            ));
        }
        Ok((off, n * dt.itemsize()))
    }

    fn rows(&self) -> impl Iterator<Item = &'a [u8]> {
        let item = self.rows.dtype.itemsize();
        self.rows.bytes.chunks_exact(item)
    }
}

fn i64s<const N: usize>(row: &[u8], (off, _): Loc) -> [i64; N] {
    std::array::from_fn(|i| {
        i64::from_le_bytes(row[off + 8 * i..off + 8 * i + 8].try_into().unwrap())
    })
}

fn f64s<const N: usize>(row: &[u8], (off, _): Loc) -> [f64; N] {
    std::array::from_fn(|i| {
        f64::from_le_bytes(row[off + 8 * i..off + 8 * i + 8].try_into().unwrap())
    })
}

fn f32s<const N: usize>(row: &[u8], (off, _): Loc) -> [f32; N] {
    std::array::from_fn(|i| {
        f32::from_le_bytes(row[off + 4 * i..off + 4 * i + 4].try_into().unwrap())
    })
}

fn f32_vec(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
