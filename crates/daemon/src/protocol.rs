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

mod error;
mod files;
pub use error::{ChannelError, FrameError, FrameProblem, HelloError};
pub use files::{FileDecl, FileError, MAX_FILES, MAX_FILES_BYTES};

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
    /// Opt-in (docs/protocol.md 6.1): at a clean shutdown the daemon syncs and sends one
    /// last durability reply marked `"final": true` before it closes the connection.
    pub final_ack: bool,
    /// Opt-in, needs `seq` (docs/protocol.md 4.2): frames repeating a sequence number this
    /// sensor already wrote in this trace are dropped and counted, not written twice.
    pub dedup: bool,
    /// Opt-in (docs/protocol.md 2.6): sidecar files for the sensor's directory, whose bytes
    /// follow the hello line in this order.
    pub files: Vec<FileDecl>,
}

impl Hello {
    /// How many bytes of files follow the hello line.
    pub fn files_bytes(&self) -> usize {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Parses one hello line (without its newline).
pub fn parse_hello(line: &[u8], max_channels: usize) -> Result<Hello, HelloError> {
    let v: Value = serde_json::from_slice(line).map_err(HelloError::NotJson)?;
    let Value::Object(obj) = v else {
        return Err(HelloError::NotObject);
    };
    for k in obj.keys() {
        if !matches!(
            k.as_str(),
            "roverlog" | "sensor" | "channels" | "seq" | "final_ack" | "dedup" | "files"
        ) {
            return Err(HelloError::UnknownKey(k.clone()));
        }
    }
    match obj.get("roverlog").and_then(Value::as_u64) {
        Some(PROTOCOL_VERSION) => {}
        _ => return Err(HelloError::Version),
    }
    let sensor = match obj.get("sensor") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(HelloError::NoSensor),
    };
    validate_name("sensor", &sensor).map_err(HelloError::SensorName)?;
    let seq = match obj.get("seq") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(HelloError::Seq),
    };
    let flag = |key: &'static str| match obj.get(key) {
        None | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(_) => Err(HelloError::NotBool(key)),
    };
    let final_ack = flag("final_ack")?;
    let dedup = flag("dedup")?;
    if dedup && !seq {
        return Err(HelloError::DedupWithoutSeq);
    }
    let files = match obj.get("files") {
        None => Vec::new(),
        Some(v) => files::parse_files(v).map_err(HelloError::Files)?,
    };
    let Some(Value::Array(list)) = obj.get("channels") else {
        return Err(HelloError::NoChannels);
    };
    if list.is_empty() {
        return Err(HelloError::EmptyChannels);
    }
    if list.len() > max_channels {
        return Err(HelloError::TooManyChannels {
            count: list.len(),
            max: max_channels,
        });
    }
    let mut channels = Vec::with_capacity(list.len());
    for (index, c) in list.iter().enumerate() {
        let (name, ch) =
            parse_channel(c).map_err(|problem| HelloError::Channel { index, problem })?;
        channels.push((name, ch));
    }
    let meta = SensorMeta { channels };
    meta.validate().map_err(HelloError::Channels)?;
    Ok(Hello {
        sensor,
        channels: meta,
        seq,
        final_ack,
        dedup,
        files,
    })
}

/// The connection task's whole hello step: [`parse_hello`], then the frame layout, refusing a
/// hello whose smallest possible frame (timestamp, seq, fixed-size channels, length words)
/// is over `max_frame_bytes`: every one of its frames would be refused, so say so now.
pub fn accept_hello(
    line: &[u8],
    max_channels: usize,
    max_frame_bytes: u32,
) -> Result<(Hello, FrameLayout), HelloError> {
    let hello = parse_hello(line, max_channels)?;
    let layout = FrameLayout::new(&hello, max_frame_bytes);
    if layout.min_len() > max_frame_bytes as usize {
        return Err(HelloError::FrameTooLarge {
            sensor: hello.sensor,
            min_len: layout.min_len(),
            max_frame_bytes,
        });
    }
    Ok((hello, layout))
}

fn parse_channel(c: &Value) -> Result<(String, ChannelMeta), ChannelError> {
    let Value::Object(o) = c else {
        return Err(ChannelError::NotObject);
    };
    for k in o.keys() {
        if !matches!(k.as_str(), "name" | "format" | "type" | "shape" | "desc") {
            return Err(ChannelError::UnknownKey(k.clone()));
        }
    }
    let s = |k: &'static str| -> Result<&str, ChannelError> {
        o.get(k)
            .and_then(Value::as_str)
            .ok_or(ChannelError::NotString(k))
    };
    let name = s("name")?.to_string();
    if name == TS_CHANNEL {
        return Err(ChannelError::TsDeclared);
    }
    validate_name("channel", &name).map_err(ChannelError::Name)?;
    let format = match ChannelFormat::parse(s("format")?) {
        f @ (ChannelFormat::Raw
        | ChannelFormat::Lzmaf
        | ChannelFormat::Blob(_)
        | ChannelFormat::Mjpg) => f,
        other => {
            return Err(ChannelError::NotIngestible {
                name,
                format: other.as_str().to_string(),
            })
        }
    };
    let dtype = DType::parse(s("type")?).map_err(|source| ChannelError::Type {
        name: name.clone(),
        source,
    })?;
    let shape = match o.get("shape") {
        Some(Value::Array(dims)) => dims
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ChannelError::BadShape { name: name.clone() })?,
        _ => return Err(ChannelError::NoShape { name }),
    };
    let desc = match o.get("desc") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d.clone(),
        Some(_) => return Err(ChannelError::BadDesc { name }),
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
    pub fn check(&self, buf: &[u8], frame_no: u64) -> Result<Check, FrameError> {
        let refuse = |problem| {
            Err(FrameError {
                frame: frame_no,
                problem,
            })
        };
        let Some(head) = buf.get(..4) else {
            return Ok(Check::Incomplete(4));
        };
        let len = u32::from_le_bytes(head.try_into().expect("4 bytes"));
        if len == 0 {
            return Ok(Check::SyncRequest);
        }
        if len > self.max_frame_bytes {
            return refuse(FrameProblem::OverLimit {
                len,
                max_frame_bytes: self.max_frame_bytes,
            });
        }
        let len = len as usize;
        if len < self.min_len {
            return refuse(FrameProblem::Short {
                len,
                min_len: self.min_len,
            });
        }
        let total = 4 + len;
        let Some(body) = buf.get(4..total) else {
            return Ok(Check::Incomplete(total));
        };
        let ts = f64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
        if !ts.is_finite() {
            return refuse(FrameProblem::Timestamp(ts));
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
                        return refuse(FrameProblem::LengthWordPastEnd { channel: i });
                    };
                    pos += 4;
                    let n = u32::from_le_bytes(w.try_into().expect("4 bytes")) as usize;
                    if n == 0 {
                        return refuse(FrameProblem::EmptySample { channel: i });
                    }
                    n
                }
            };
            if body.len() - pos < n {
                return refuse(FrameProblem::PastEnd {
                    channel: i,
                    needs: n,
                    left: body.len() - pos,
                });
            }
            pos += n;
        }
        if pos != body.len() {
            return refuse(FrameProblem::Trailing {
                bytes: body.len() - pos,
                len,
            });
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

    fn hello(s: &str) -> Result<Hello, HelloError> {
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
            let e = hello(input).unwrap_err().to_string();
            assert!(e.contains(want), "{input}: {e}");
        }
    }

    /// The error line a driver reads, word for word, for the refusals whose text is all ours
    /// (drivers and their users match on these).
    #[test]
    fn hello_error_lines_keep_their_words() {
        let ch = |c: &str| format!(r#"{{"roverlog": 1, "sensor": "a", "channels": [{c}]}}"#);
        let cases = [
            ("[]".to_string(), "hello must be a JSON object"),
            (
                r#"{"roverlog": 2, "sensor": "a", "channels": []}"#.into(),
                "hello: \"roverlog\" must be the protocol version 1",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "extra": 1, "channels": []}"#.into(),
                "hello: unknown key \"extra\" (expected roverlog, sensor, channels, seq, final_ack, dedup, files)",
            ),
            (
                r#"{"roverlog": 1, "channels": []}"#.into(),
                "hello: \"sensor\" missing or not a string",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "seq": 1, "channels": []}"#.into(),
                "hello: \"seq\" must be true or false",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a"}"#.into(),
                "hello: \"channels\" missing or not a list",
            ),
            (
                r#"{"roverlog": 1, "sensor": "a", "channels": []}"#.into(),
                "hello: \"channels\" is empty",
            ),
            (
                ch(r#"{"name": "x", "format": "raw", "type": "u1", "shape": []}, {"name": "y", "format": "raw", "type": "u1", "shape": []}"#),
                "hello: 2 channels, over max_channels 1",
            ),
            (ch("1"), "hello: channel 0: expected an object"),
            (
                ch(r#"{"name": "x", "bad": 1}"#),
                "hello: channel 0: unknown key \"bad\" (expected name, format, type, shape, desc)",
            ),
            (
                ch(r#"{"format": "raw"}"#),
                "hello: channel 0: \"name\" missing or not a string",
            ),
            (
                ch(r#"{"name": "ts", "format": "raw", "type": "f8", "shape": []}"#),
                "hello: channel 0: \"ts\" is implicit and may not be declared",
            ),
            (
                ch(r#"{"name": "x", "format": "lzma", "type": "u1", "shape": []}"#),
                "hello: channel 0: \"x\": format \"lzma\" cannot be ingested (raw, lzmaf, jpg, npz, mjpg)",
            ),
            (
                ch(r#"{"name": "x", "format": "raw", "type": "u1", "shape": [-1]}"#),
                "hello: channel 0: \"x\": shape entries must be non-negative integers",
            ),
            (
                ch(r#"{"name": "x", "format": "raw", "type": "u1"}"#),
                "hello: channel 0: \"x\": \"shape\" missing or not a list",
            ),
            (
                ch(r#"{"name": "x", "format": "raw", "type": "u1", "shape": [], "desc": 3}"#),
                "hello: channel 0: \"x\": \"desc\" is not a string",
            ),
        ];
        for (input, want) in cases {
            let e = parse_hello(input.as_bytes(), 1).unwrap_err();
            assert_eq!(e.to_string(), want, "{input}");
        }
    }

    #[test]
    fn a_hello_whose_frames_cannot_fit_is_refused() {
        let line = br#"{"roverlog": 1, "sensor": "big", "channels": [{"name": "x", "format": "raw", "type": "u1", "shape": [100]}]}"#;
        // 8 (ts) + 100: fits in 108, not in 107.
        assert!(accept_hello(line, 16, 108).is_ok());
        let e = accept_hello(line, 16, 107).unwrap_err();
        assert!(
            matches!(
                e,
                HelloError::FrameTooLarge {
                    min_len: 108,
                    max_frame_bytes: 107,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "hello: the smallest frame of sensor \"big\" is 108 bytes, over max_frame_bytes 107"
        );
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

    /// The error line a driver reads, word for word (drivers match on these).
    #[test]
    fn bad_frames_are_errors_before_waiting() {
        let l = FrameLayout::new(&imu(), 1000);
        let refused = |buf: &[u8], frame_no| {
            let e = l.check(buf, frame_no).unwrap_err();
            assert_eq!(e.frame, frame_no);
            (e.problem.clone(), e.to_string())
        };
        assert_eq!(
            refused(&u32::MAX.to_le_bytes(), 3),
            (
                FrameProblem::OverLimit {
                    len: u32::MAX,
                    max_frame_bytes: 1000
                },
                "frame 3: len 4294967295 is over max_frame_bytes 1000".into()
            )
        );
        assert_eq!(
            refused(&5u32.to_le_bytes(), 0),
            (
                FrameProblem::Short {
                    len: 5,
                    min_len: 32
                },
                "frame 0: len 5 is shorter than the smallest valid frame (32 bytes)".into()
            )
        );
        let f = frame(f64::NAN, 0, &[0; 12], b"");
        let (problem, text) = refused(&f, 0);
        assert!(matches!(problem, FrameProblem::Timestamp(t) if t.is_nan()));
        assert_eq!(text, "frame 0: timestamp NaN is not finite");
        let f = frame(1.0, 0, &[0; 12], b"");
        assert_eq!(
            refused(&f, 0).1,
            "frame 0: channel 1: empty sample (jpg/npz samples need at least one byte)"
        );
        let mut f = frame(1.0, 0, &[0; 12], b"ab");
        let n = f.len();
        f[n - 6] = 200; // the jpg length word claims more than the frame holds
        assert_eq!(
            refused(&f, 0),
            (
                FrameProblem::PastEnd {
                    channel: 1,
                    needs: 200,
                    left: 2
                },
                "frame 0: channel 1: needs 200 bytes, only 2 left in the frame".into()
            )
        );
        let mut f = frame(1.0, 0, &[0; 12], b"ab");
        f[0] += 1;
        f.push(0);
        assert_eq!(
            refused(&f, 0),
            (
                FrameProblem::Trailing { bytes: 1, len: 35 },
                "frame 0: 1 bytes after the last channel (len 35 does not match the channels)"
                    .into()
            )
        );
    }
}
