//! The ingest protocol, sans-io: the hello line and the binary frames, parsed from byte
//! slices. Framing is check-then-parse: [`FrameLayout::check`] says "need more bytes", "a
//! durability request" or "a whole, valid frame of n bytes" without copying anything, and every
//! length is checked against an explicit limit before the daemon waits for the bytes.
//!
//! Wire format (little-endian), after a one-line JSON hello:
//!
//! ```text
//! u32 len | f64 ts | [u64 seq] | channel 0 | channel 1 | ...
//!           '-------------- len bytes ------------------'
//! fixed-size channel (raw, lzmaf): prod(shape) * itemsize bytes
//! variable-size channel (jpg, npz): u32 n | n bytes
//! len = 0: a durability request (fsync, answer {"ok": true, "durable": N})
//! ```

use serde_json::{Map, Value};

use roverlog_core::format::{
    validate_name, ChannelFormat, ChannelMeta, DType, SensorMeta, TS_CHANNEL,
};

/// The protocol version in the hello.
pub const PROTOCOL_VERSION: u64 = 1;

/// A parsed, validated hello.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub sensor: String,
    /// The channels as the driver declared them (wire formats), `ts` not included.
    pub channels: SensorMeta,
    /// Frames carry a `u64` sequence number after the timestamp.
    pub seq: bool,
}

/// Parses one hello line (without its newline).
pub fn parse_hello(line: &[u8], max_channels: usize) -> Result<Hello, String> {
    let v: Value =
        serde_json::from_slice(line).map_err(|e| format!("hello is not valid JSON: {e}"))?;
    let Value::Object(obj) = v else {
        return Err("hello must be a JSON object".into());
    };
    for k in obj.keys() {
        if !matches!(k.as_str(), "roverlog" | "sensor" | "channels" | "seq") {
            return Err(format!(
                "hello: unknown key {k:?} (expected roverlog, sensor, channels, seq)"
            ));
        }
    }
    match obj.get("roverlog").and_then(Value::as_u64) {
        Some(PROTOCOL_VERSION) => {}
        _ => {
            return Err(format!(
                "hello: \"roverlog\" must be the protocol version {PROTOCOL_VERSION}"
            ))
        }
    }
    let sensor = match obj.get("sensor") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("hello: \"sensor\" missing or not a string".into()),
    };
    validate_name("sensor", &sensor).map_err(|e| format!("hello: {e}"))?;
    let seq = match obj.get("seq") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err("hello: \"seq\" must be true or false".into()),
    };
    let Some(Value::Array(list)) = obj.get("channels") else {
        return Err("hello: \"channels\" missing or not a list".into());
    };
    if list.is_empty() {
        return Err("hello: \"channels\" is empty".into());
    }
    if list.len() > max_channels {
        return Err(format!(
            "hello: {} channels, over max_channels {max_channels}",
            list.len()
        ));
    }
    let mut channels = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let (name, ch) = parse_channel(c).map_err(|e| format!("hello: channel {i}: {e}"))?;
        channels.push((name, ch));
    }
    let meta = SensorMeta { channels };
    meta.validate().map_err(|e| format!("hello: {e}"))?;
    Ok(Hello {
        sensor,
        channels: meta,
        seq,
    })
}

/// The connection task's whole hello step: [`parse_hello`], then the frame layout, refusing a
/// hello whose smallest possible frame (timestamp, seq, fixed-size channels, length words)
/// is over `max_frame_bytes`: every one of its frames would be refused, so say so now.
pub fn accept_hello(
    line: &[u8],
    max_channels: usize,
    max_frame_bytes: u32,
) -> Result<(Hello, FrameLayout), String> {
    let hello = parse_hello(line, max_channels)?;
    let layout = FrameLayout::new(&hello, max_frame_bytes);
    if layout.min_len() > max_frame_bytes as usize {
        return Err(format!(
            "hello: the smallest frame of sensor {:?} is {} bytes, over max_frame_bytes {max_frame_bytes}",
            hello.sensor,
            layout.min_len()
        ));
    }
    Ok((hello, layout))
}

fn parse_channel(c: &Value) -> Result<(String, ChannelMeta), String> {
    let Value::Object(o) = c else {
        return Err("expected an object".into());
    };
    for k in o.keys() {
        if !matches!(k.as_str(), "name" | "format" | "type" | "shape" | "desc") {
            return Err(format!(
                "unknown key {k:?} (expected name, format, type, shape, desc)"
            ));
        }
    }
    let s = |k: &str| -> Result<&str, String> {
        o.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("\"{k}\" missing or not a string"))
    };
    let name = s("name")?.to_string();
    if name == TS_CHANNEL {
        return Err("\"ts\" is implicit and may not be declared".into());
    }
    validate_name("channel", &name).map_err(|e| e.to_string())?;
    let format = match ChannelFormat::parse(s("format")?) {
        f @ (ChannelFormat::Raw
        | ChannelFormat::Lzmaf
        | ChannelFormat::Blob(_)
        | ChannelFormat::Mjpg) => f,
        other => {
            return Err(format!(
                "{name:?}: format {:?} cannot be ingested (raw, lzmaf, jpg, npz, mjpg)",
                other.as_str()
            ))
        }
    };
    let dtype = DType::parse(s("type")?).map_err(|e| format!("{name:?}: {e}"))?;
    let shape = match o.get("shape") {
        Some(Value::Array(dims)) => dims
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("{name:?}: shape entries must be non-negative integers"))?,
        _ => return Err(format!("{name:?}: \"shape\" missing or not a list")),
    };
    let desc = match o.get("desc") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d.clone(),
        Some(_) => return Err(format!("{name:?}: \"desc\" is not a string")),
    };
    Ok((name, ChannelMeta::new(format, dtype, shape, &desc)))
}

/// The reply to a hello, or to anything else that ends a connection with an error.
pub fn error_line(msg: &str) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("ok".into(), false.into());
    m.insert("error".into(), msg.into());
    line(Value::Object(m))
}

/// A JSON value as one line.
pub fn line(v: Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(&v).expect("JSON of a value");
    out.push(b'\n');
    out
}

/// Where each channel's bytes sit inside a frame: the fixed part is known from the hello,
/// variable-size channels carry their own `u32` length.
#[derive(Debug, Clone)]
pub struct FrameLayout {
    seq: bool,
    /// `Some(n)`: fixed-size, n bytes; `None`: `u32` length then bytes.
    channels: Vec<Option<usize>>,
    /// Smallest valid `len`.
    min_len: usize,
    max_frame_bytes: u32,
}

/// What [`FrameLayout::check`] found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// Not enough bytes yet: at least this many in total are needed.
    Incomplete(usize),
    /// A `len = 0` durability request (4 bytes).
    SyncRequest,
    /// A whole valid frame of `total` bytes (the `u32` length included).
    Frame { total: usize, ts: f64, seq: u64 },
}

impl FrameLayout {
    /// The layout of `hello`'s frames, with the daemon's frame limit.
    pub fn new(hello: &Hello, max_frame_bytes: u32) -> FrameLayout {
        let channels: Vec<Option<usize>> = hello
            .channels
            .data_channels()
            .map(|(_, c)| c.format.is_fixed_size().then(|| c.sample_bytes()))
            .collect();
        let min_len = 8
            + if hello.seq { 8 } else { 0 }
            + channels.iter().map(|c| c.unwrap_or(4)).sum::<usize>();
        FrameLayout {
            seq: hello.seq,
            channels,
            min_len,
            max_frame_bytes,
        }
    }

    /// The same channels with or without the sequence number: a sensor's connections may
    /// differ in `seq` (it is not part of the sensor's identity).
    pub fn with_seq(&self, seq: bool) -> FrameLayout {
        let mut l = self.clone();
        if l.seq != seq {
            l.min_len = if seq { l.min_len + 8 } else { l.min_len - 8 };
            l.seq = seq;
        }
        l
    }

    /// The smallest frame `len` (timestamp, sequence number, fixed channels, length words).
    pub fn min_len(&self) -> usize {
        self.min_len
    }

    /// Number of data channels.
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Checks the frame at the start of `buf`. `frame_no` (0-based, per connection) is only
    /// used in error messages.
    pub fn check(&self, buf: &[u8], frame_no: u64) -> Result<Check, String> {
        let Some(head) = buf.get(..4) else {
            return Ok(Check::Incomplete(4));
        };
        let len = u32::from_le_bytes(head.try_into().expect("4 bytes"));
        if len == 0 {
            return Ok(Check::SyncRequest);
        }
        if len > self.max_frame_bytes {
            return Err(format!(
                "frame {frame_no}: len {len} is over max_frame_bytes {}",
                self.max_frame_bytes
            ));
        }
        let len = len as usize;
        if len < self.min_len {
            return Err(format!(
                "frame {frame_no}: len {len} is shorter than the smallest valid frame ({} bytes)",
                self.min_len
            ));
        }
        let total = 4 + len;
        let Some(body) = buf.get(4..total) else {
            return Ok(Check::Incomplete(total));
        };
        let ts = f64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
        if !ts.is_finite() {
            return Err(format!("frame {frame_no}: timestamp {ts} is not finite"));
        }
        let mut pos = 8;
        let seq = if self.seq {
            pos += 8;
            u64::from_le_bytes(body[8..16].try_into().expect("8 bytes"))
        } else {
            0
        };
        for (i, ch) in self.channels.iter().enumerate() {
            let n = match ch {
                Some(n) => *n,
                None => {
                    let Some(w) = body.get(pos..pos + 4) else {
                        return Err(format!(
                            "frame {frame_no}: channel {i}: length word past the end of the frame"
                        ));
                    };
                    pos += 4;
                    let n = u32::from_le_bytes(w.try_into().expect("4 bytes")) as usize;
                    if n == 0 {
                        return Err(format!(
                            "frame {frame_no}: channel {i}: empty sample (jpg/npz samples need at least one byte)"
                        ));
                    }
                    n
                }
            };
            if body.len() - pos < n {
                return Err(format!(
                    "frame {frame_no}: channel {i}: needs {n} bytes, only {} left in the frame",
                    body.len() - pos
                ));
            }
            pos += n;
        }
        if pos != body.len() {
            return Err(format!(
                "frame {frame_no}: {} bytes after the last channel (len {len} does not match the channels)",
                body.len() - pos
            ));
        }
        Ok(Check::Frame { total, ts, seq })
    }

    /// Splits a frame's body (after `len`, as validated by [`FrameLayout::check`]) into its
    /// timestamp and channel slices, written into `out` (cleared first).
    pub fn split<'a>(&self, body: &'a [u8], out: &mut Vec<&'a [u8]>) -> f64 {
        out.clear();
        let ts = f64::from_le_bytes(body[..8].try_into().expect("checked frame"));
        let mut pos = if self.seq { 16 } else { 8 };
        for ch in &self.channels {
            let n = match ch {
                Some(n) => *n,
                None => {
                    let n = u32::from_le_bytes(body[pos..pos + 4].try_into().expect("checked"));
                    pos += 4;
                    n as usize
                }
            };
            out.push(&body[pos..pos + n]);
            pos += n;
        }
        ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(s: &str) -> Result<Hello, String> {
        parse_hello(s.as_bytes(), 16)
    }

    fn imu() -> Hello {
        hello(r#"{"roverlog": 1, "sensor": "imu", "seq": true, "channels": [{"name": "acc", "format": "raw", "type": "f4", "shape": [3]}, {"name": "img", "format": "jpg", "type": "u1", "shape": [2, 2]}]}"#).unwrap()
    }

    fn frame(ts: f64, seq: u64, acc: &[u8], img: &[u8]) -> Vec<u8> {
        let mut body = ts.to_le_bytes().to_vec();
        body.extend(seq.to_le_bytes());
        body.extend(acc);
        body.extend((img.len() as u32).to_le_bytes());
        body.extend(img);
        let mut f = (body.len() as u32).to_le_bytes().to_vec();
        f.extend(body);
        f
    }

    #[test]
    fn hello_errors_name_the_problem() {
        let cases = [
            ("{", "not valid JSON"),
            ("[]", "JSON object"),
            (
                r#"{"roverlog": 2, "sensor": "a", "channels": []}"#,
                "protocol version",
            ),
            (
                r#"{"roverlog": 1, "sensor": "../a", "channels": []}"#,
                "invalid sensor name",
            ),
            (
                r#"{"roverlog": 1, "sensor": "_a", "channels": []}"#,
                "virtual",
            ),
            (r#"{"roverlog": 1, "sensor": "a", "channels": []}"#, "empty"),
            (
                r#"{"roverlog": 1, "sensor": "a", "channels": [{"name": "ts", "format": "raw", "type": "f8", "shape": []}]}"#,
                "implicit",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "channels": [{"name": "x", "format": "lzma", "type": "u1", "shape": []}]}"#,
                "cannot be ingested",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "channels": [{"name": "x", "format": "raw", "type": "q9", "shape": []}]}"#,
                "unknown type",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "channels": [{"name": "x", "format": "raw", "type": "u1", "shape": [0]}]}"#,
                "empty sample",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "extra": 1, "channels": []}"#,
                "unknown key",
            ),
        ];
        for (input, want) in cases {
            let e = hello(input).unwrap_err();
            assert!(e.contains(want), "{input}: {e}");
        }
    }

    #[test]
    fn a_hello_whose_frames_cannot_fit_is_refused() {
        let line = br#"{"roverlog": 1, "sensor": "big", "channels": [{"name": "x", "format": "raw", "type": "u1", "shape": [100]}]}"#;
        // 8 (ts) + 100: fits in 108, not in 107.
        assert!(accept_hello(line, 16, 108).is_ok());
        let e = accept_hello(line, 16, 107).unwrap_err();
        assert!(e.contains("over max_frame_bytes 107"), "{e}");
    }

    #[test]
    fn check_then_parse() {
        let h = imu();
        let l = FrameLayout::new(&h, 1 << 20);
        let f = frame(1.5, 7, &[0; 12], b"jpeg");
        for cut in 0..f.len() {
            assert!(matches!(l.check(&f[..cut], 0), Ok(Check::Incomplete(_))));
        }
        assert_eq!(
            l.check(&f, 0),
            Ok(Check::Frame {
                total: f.len(),
                ts: 1.5,
                seq: 7
            })
        );
        let mut out = Vec::new();
        assert_eq!(l.split(&f[4..], &mut out), 1.5);
        assert_eq!(out, vec![&[0u8; 12][..], b"jpeg"]);
        assert_eq!(l.check(&[0, 0, 0, 0], 0), Ok(Check::SyncRequest));
    }

    #[test]
    fn bad_frames_are_errors_before_waiting() {
        let l = FrameLayout::new(&imu(), 1000);
        assert!(l
            .check(&u32::MAX.to_le_bytes(), 3)
            .unwrap_err()
            .contains("frame 3"));
        assert!(l
            .check(&5u32.to_le_bytes(), 0)
            .unwrap_err()
            .contains("shorter"));
        let f = frame(f64::NAN, 0, &[0; 12], b"");
        assert!(l.check(&f, 0).unwrap_err().contains("not finite"));
        let mut f = frame(1.0, 0, &[0; 12], b"ab");
        let n = f.len();
        f[n - 6] = 200; // the jpg length word claims more than the frame holds
        assert!(l.check(&f, 0).unwrap_err().contains("needs 200"));
        let mut f = frame(1.0, 0, &[0; 12], b"ab");
        f[0] += 1;
        f.push(0);
        assert!(l
            .check(&f, 0)
            .unwrap_err()
            .contains("after the last channel"));
    }
}
