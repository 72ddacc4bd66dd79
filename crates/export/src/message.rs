//! One roverd sample as a Foxglove message: which schema a channel gets, and the bytes of one
//! sample's message. Shared by the MCAP export and the daemon's live Foxglove feed, so both
//! show a channel the same way.

use std::collections::BTreeMap;

use foxglove::messages::{CompressedImage, RawImage, Timestamp};
use foxglove::{Encode, Schema};
use serde_json::{json, Value};

use roverlog_core::format::meta::{ChannelFormat, ChannelMeta};
use roverlog_core::format::DType;

/// How one channel's samples become messages.
#[derive(Debug, Clone)]
pub enum MessageKind {
    /// `jpg` and `mjpg` frames: `foxglove.CompressedImage`, the JPEG bytes as stored.
    Compressed,
    /// `u1 [H, W, 3]` (`rgb8`), `u1 [H, W]` (`mono8`), `u2 [H, W]` (`16UC1`): `foxglove.RawImage`.
    Raw {
        encoding: &'static str,
        width: u32,
        height: u32,
        step: u32,
    },
    /// Every other fixed-size channel: `{"value": ...}`, schema [`SAMPLE_SCHEMA`].
    Json { dtype: DType, shape: Vec<usize> },
}

/// The JSON Schema of [`MessageKind::Json`] messages (`roverlog.Sample`).
pub const SAMPLE_SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "roverlog.Sample",
  "description": "One sample of a roverd channel: `value` holds it as nested lists of the channel's shape (see the channel's metadata: format, type, shape, desc); complex numbers are [re, im].",
  "type": "object",
  "properties": {"value": {}},
  "required": ["value"]
}"#;

impl MessageKind {
    /// How `ch` is shown; `None` for channels that have no message form (`npz`).
    pub fn of(ch: &ChannelMeta) -> Option<MessageKind> {
        let jpeg =
            ch.format == ChannelFormat::Mjpg || ch.format == ChannelFormat::Blob("jpg".into());
        if jpeg {
            return Some(MessageKind::Compressed);
        }
        if !ch.format.is_fixed_size() {
            return None;
        }
        let dims = |i: usize| ch.shape.get(i).and_then(|&d| u32::try_from(d).ok());
        let image = match (ch.dtype, ch.shape.len(), ch.shape.last()) {
            (DType::U1, 3, Some(3)) => Some(("rgb8", 3)),
            (DType::U1, 2, _) => Some(("mono8", 1)),
            (DType::U2, 2, _) => Some(("16UC1", 2)),
            _ => None,
        };
        if let (Some((encoding, bpp)), Some(height), Some(width)) = (image, dims(0), dims(1)) {
            return Some(MessageKind::Raw {
                encoding,
                width,
                height,
                step: width * bpp,
            });
        }
        Some(MessageKind::Json {
            dtype: ch.dtype,
            shape: ch.shape.clone(),
        })
    }

    /// The schema of this kind's messages.
    pub fn schema(&self) -> Schema {
        match self {
            MessageKind::Compressed => {
                CompressedImage::get_schema().expect("SDK messages have schemas")
            }
            MessageKind::Raw { .. } => RawImage::get_schema().expect("SDK messages have schemas"),
            MessageKind::Json { .. } => Schema::new(
                "roverlog.Sample",
                "jsonschema",
                SAMPLE_SCHEMA.as_bytes().to_vec(),
            ),
        }
    }

    /// The message encoding (`protobuf` or `json`).
    pub fn message_encoding(&self) -> &'static str {
        match self {
            MessageKind::Json { .. } => "json",
            _ => "protobuf",
        }
    }

    /// The message of `sample` of sensor `frame_id` at `ts` (epoch seconds).
    pub fn encode(&self, frame_id: &str, ts: f64, sample: &[u8]) -> Vec<u8> {
        match self {
            MessageKind::Compressed => encode(&CompressedImage {
                timestamp: Some(stamp(ts)),
                frame_id: frame_id.to_owned(),
                data: sample.to_vec().into(),
                format: "jpeg".into(),
            }),
            MessageKind::Raw {
                encoding,
                width,
                height,
                step,
            } => encode(&RawImage {
                timestamp: Some(stamp(ts)),
                frame_id: frame_id.to_owned(),
                width: *width,
                height: *height,
                encoding: encoding.to_string(),
                step: *step,
                data: sample.to_vec().into(),
            }),
            MessageKind::Json { dtype, shape } => {
                serde_json::to_vec(&json!({"value": nested(*dtype, shape, sample)}))
                    .expect("JSON of a value")
            }
        }
    }
}

/// The topic of a sensor's channel.
pub fn topic(sensor: &str, channel: &str) -> String {
    format!("/{sensor}/{channel}")
}

/// A channel's roverd description as channel metadata (`format`, `type`, `shape`, `desc`).
pub fn channel_metadata(ch: &ChannelMeta) -> BTreeMap<String, String> {
    [
        ("format", ch.format.as_str().to_string()),
        ("type", ch.dtype.code().to_string()),
        (
            "shape",
            serde_json::to_string(&ch.shape).expect("JSON of a list"),
        ),
        ("desc", ch.desc.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `t` (epoch seconds) as a Foxglove timestamp.
pub fn stamp(t: f64) -> Timestamp {
    let t = t.max(0.0);
    let sec = t.floor().min(f64::from(u32::MAX));
    Timestamp::new(sec as u32, ((t - sec) * 1e9).min(999_999_999.0) as u32)
}

/// `t` (epoch seconds) in nanoseconds.
pub fn nanos(t: f64) -> u64 {
    (t.max(0.0) * 1e9).round() as u64
}

/// A message's protobuf bytes.
pub fn encode(m: &impl Encode) -> Vec<u8> {
    let mut v = Vec::new();
    m.encode(&mut v).expect("a Vec grows");
    v
}

/// One element of `dtype` at the start of `b`, as JSON.
fn element(dtype: DType, b: &[u8]) -> Value {
    let a = |n: usize| -> [u8; 8] {
        let mut x = [0u8; 8];
        x[..n].copy_from_slice(&b[..n]);
        x
    };
    match dtype {
        DType::U1 => json!(b[0]),
        DType::I1 => json!(b[0] as i8),
        DType::B1 => json!(b[0] != 0),
        DType::U2 => json!(u16::from_le_bytes([b[0], b[1]])),
        DType::I2 => json!(i16::from_le_bytes([b[0], b[1]])),
        DType::U4 => json!(u32::from_le_bytes(a(4)[..4].try_into().unwrap())),
        DType::I4 => json!(i32::from_le_bytes(a(4)[..4].try_into().unwrap())),
        DType::U8 => json!(u64::from_le_bytes(a(8))),
        DType::I8 => json!(i64::from_le_bytes(a(8))),
        DType::F2 => json!(roverlog_core::format::dtype::f16_to_f32(
            u16::from_le_bytes([b[0], b[1]])
        )),
        DType::F4 => json!(f32::from_le_bytes(a(4)[..4].try_into().unwrap())),
        DType::F8 => json!(f64::from_le_bytes(a(8))),
        DType::C8 => json!([element(DType::F4, b), element(DType::F4, &b[4..])]),
        DType::C16 => json!([element(DType::F8, b), element(DType::F8, &b[8..])]),
    }
}

/// A sample as nested lists of `shape`.
fn nested(dtype: DType, shape: &[usize], b: &[u8]) -> Value {
    match shape.split_first() {
        None => element(dtype, b),
        Some((&n, rest)) => {
            let per = rest.iter().product::<usize>() * dtype.itemsize();
            Value::Array((0..n).map(|i| nested(dtype, rest, &b[i * per..])).collect())
        }
    }
}
