//! An L5Kit zarr dataset as a replay source: the ego (one sample per frame), the agents (one
//! sample per agent, at its frame's time) and the traffic light faces likewise.
//!
//! Every field of each array becomes a channel of the same name, so nothing is lost: numbers
//! keep their type and sub-shape, `<U n` strings become `u4 [n]` (their UTF-32 code units),
//! `|S n` become `u1 [n]`. Timestamps are the frames' int64 nanoseconds as f64 seconds (the
//! exact value stays in the `timestamp` channel of `ego`); agents and light faces also get a
//! `frame` channel (`u8`), the row of their frame.

use std::ops::Range;
use std::path::Path;

use super::ChunkedDataset;
use crate::error::{Error, Result, ZarrProblem};
use crate::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
use crate::replay::{Source, SourceSensor};
use crate::zarr::{self, ScalarKind, ZarrArray};

/// Rows decoded at a time per sensor (samples are read in order, so a block is reused).
const BLOCK_ROWS: u64 = 16 * 1024;

/// The roverd channel for a zarr field: its dtype code and per-sample shape.
pub fn field_channel(field: &zarr::Field) -> Result<ChannelMeta> {
    let unsupported = || Error::UnsupportedFormat {
        channel: field.name.clone(),
        format: format!(
            "zarr field type {} (nested or unsupported)",
            field.dtype.numpy_str()
        ),
    };
    let zarr::DType::Scalar(s) = &field.dtype else {
        return Err(unsupported());
    };
    let mut shape = field.shape.clone();
    let code = match (s.kind, s.size) {
        (ScalarKind::Bool, 1) => DType::B1,
        (ScalarKind::Int, 1) => DType::I1,
        (ScalarKind::Int, 2) => DType::I2,
        (ScalarKind::Int, 4) => DType::I4,
        (ScalarKind::Int, 8) => DType::I8,
        (ScalarKind::UInt, 1) => DType::U1,
        (ScalarKind::UInt, 2) => DType::U2,
        (ScalarKind::UInt, 4) => DType::U4,
        (ScalarKind::UInt, 8) => DType::U8,
        (ScalarKind::Float, 2) => DType::F2,
        (ScalarKind::Float, 4) => DType::F4,
        (ScalarKind::Float, 8) => DType::F8,
        (ScalarKind::Unicode, n) => {
            shape.push(n / 4);
            DType::U4
        }
        (ScalarKind::Bytes | ScalarKind::Void, n) => {
            shape.push(n);
            DType::U1
        }
        _ => return Err(unsupported()),
    };
    let desc = format!("L5Kit field {} ({})", field.name, field.dtype.numpy_str());
    Ok(ChannelMeta::new(ChannelFormat::Raw, code, shape, &desc))
}

struct Table {
    array: ZarrArray,
    /// (offset, size) of each field inside a row, in channel order.
    fields: Vec<(usize, usize)>,
    /// For agents and light faces: the frame row of each sample.
    frame_of: Option<Vec<u64>>,
    ts: Vec<f64>,
    block: Range<u64>,
    rows: Vec<u8>,
}

/// An L5Kit dataset as sensors `ego`, `agents` and (when present) `traffic_light_faces`.
pub struct L5KitSource {
    sensors: Vec<SourceSensor>,
    tables: Vec<Table>,
}

fn le_i64s(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// Nanoseconds to seconds without going through a lossy `ns as f64` first.
fn ns_to_s(ns: i64) -> f64 {
    ns.div_euclid(1_000_000_000) as f64 + ns.rem_euclid(1_000_000_000) as f64 * 1e-9
}

impl L5KitSource {
    /// Opens the zarr group at `path` as an L5Kit dataset.
    pub fn open(path: &Path) -> Result<L5KitSource> {
        let ds = ChunkedDataset::open(path)?;
        let n_frames = ds.frames.len();
        let frame_ns = le_i64s(&ds.frames.read_field_bytes("timestamp", 0..n_frames)?);
        let frame_ts: Vec<f64> = frame_ns.iter().map(|&ns| ns_to_s(ns)).collect();
        let intervals = |field: &str| -> Result<Vec<i64>> {
            Ok(le_i64s(&ds.frames.read_field_bytes(field, 0..n_frames)?))
        };
        let mut sensors = Vec::new();
        let mut tables = Vec::new();
        let mut add = |name: &str,
                       array: ZarrArray,
                       frame_of: Option<Vec<u64>>,
                       ts: Vec<f64>|
         -> Result<()> {
            let mut meta = SensorMeta::default();
            let mut fields = Vec::new();
            for f in array.dtype().fields() {
                if f.name.is_empty() {
                    continue; // padding
                }
                meta.channels.push((f.name.clone(), field_channel(f)?));
                fields.push((f.offset, f.size()));
            }
            if frame_of.is_some() {
                meta.channels.push((
                    "frame".into(),
                    ChannelMeta::new(
                        ChannelFormat::Raw,
                        DType::U8,
                        vec![],
                        "row of this sample's frame in the frames array",
                    ),
                ));
            }
            meta.validate()?;
            sensors.push(SourceSensor {
                name: name.into(),
                meta,
            });
            tables.push(Table {
                array,
                fields,
                frame_of,
                ts,
                block: 0..0,
                rows: Vec::new(),
            });
            Ok(())
        };
        let agents_of = frames_of_rows(&ds.agents, &intervals("agent_index_interval")?)?;
        let agent_ts = agents_of.iter().map(|&f| frame_ts[f as usize]).collect();
        let light_faces = match ds.traffic_light_faces {
            Some(tl) => {
                let of = frames_of_rows(&tl, &intervals("traffic_light_faces_index_interval")?)?;
                let ts = of.iter().map(|&f| frame_ts[f as usize]).collect();
                Some((tl, of, ts))
            }
            None => None,
        };
        add("ego", ds.frames, None, frame_ts)?;
        add("agents", ds.agents, Some(agents_of), agent_ts)?;
        if let Some((tl, of, ts)) = light_faces {
            add("traffic_light_faces", tl, Some(of), ts)?;
        }
        Ok(L5KitSource { sensors, tables })
    }
}

/// The frame of every row of `array`, from the frames' `[start, end)` intervals (flattened
/// pairs), which must tile the array's rows in order.
fn frames_of_rows(array: &ZarrArray, intervals: &[i64]) -> Result<Vec<u64>> {
    let n = array.len();
    let mut out = Vec::with_capacity(n as usize);
    for (f, iv) in intervals.chunks_exact(2).enumerate() {
        let (a, b) = (iv[0], iv[1]);
        if a != out.len() as i64 || b < a || b as u64 > n {
            return Err(Error::Zarr {
                path: array.path().to_path_buf(),
                problem: ZarrProblem::FrameIntervalGap {
                    frame: f,
                    start: a,
                    end: b,
                    covered: out.len(),
                    rows: n,
                },
            });
        }
        out.extend(std::iter::repeat_n(f as u64, (b - a) as usize));
    }
    if out.len() as u64 != n {
        return Err(Error::Zarr {
            path: array.path().to_path_buf(),
            problem: ZarrProblem::FramesCoverage {
                covered: out.len(),
                rows: n,
            },
        });
    }
    Ok(out)
}

impl Source for L5KitSource {
    fn sensors(&self) -> &[SourceSensor] {
        &self.sensors
    }

    fn timestamps(&mut self, sensor: usize) -> Result<Vec<f64>> {
        Ok(self.tables[sensor].ts.clone())
    }

    fn read(&mut self, sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
        let t = &mut self.tables[sensor];
        if !t.block.contains(&index) {
            let end = (index + BLOCK_ROWS).min(t.array.len());
            if index >= end {
                return Err(Error::OutOfRange {
                    path: t.array.path().to_path_buf(),
                    index,
                    len: t.array.len(),
                });
            }
            t.rows = t.array.read_rows(index..end)?;
            t.block = index..end;
        }
        let rb = t.array.row_bytes();
        let at = (index - t.block.start) as usize * rb;
        let row = &t.rows[at..at + rb];
        let n = t.fields.len() + usize::from(t.frame_of.is_some());
        out.resize_with(n, Vec::new);
        for (buf, &(off, size)) in out.iter_mut().zip(&t.fields) {
            buf.clear();
            buf.extend_from_slice(&row[off..off + size]);
        }
        if let Some(of) = &t.frame_of {
            out[n - 1] = of[index as usize].to_le_bytes().to_vec();
        }
        Ok(())
    }
}
