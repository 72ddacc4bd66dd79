//! The driver side of the ingest protocol (`docs/protocol.md`), blocking, std only: what a
//! Rust driver, `roverlog replay` and tests use to push samples into a running daemon.
//!
//! ```no_run
//! # use roverlog_client::Driver;
//! # use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
//! let meta = SensorMeta { channels: vec![
//!     ("acc".into(), ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2")),
//! ]};
//! let (mut imu, hello) = Driver::connect("run/ingest.sock".as_ref(), "imu", &meta, false)?;
//! let acc: Vec<u8> = [0.0f32, 0.0, 9.81].iter().flat_map(|v| v.to_le_bytes()).collect();
//! imu.send(1.7e9, None, &[&acc])?;
//! let durable = imu.sync()?;
//! # Ok::<(), roverlog_client::Error>(())
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, ReplyProblem, Result, SampleMismatch, SensorFailed};
use crate::sidecar::{self, SidecarFile};
use roverlog_core::format::SensorMeta;

/// Longest reply line we accept from the daemon.
const MAX_REPLY: u64 = 64 * 1024;

/// Whether `e` means the daemon went away or is not there (yet): stopped, restarting, socket
/// missing, an older connection of the sensor not yet noticed closed, or the sensor's files
/// failed on the daemon's disk (it resumes the sensor at its durable count). A driver
/// reconnects with back-off after such errors; other errors are refusals.
pub fn is_daemon_gone(e: &Error) -> bool {
    matches!(
        e,
        Error::Io { .. }
            | Error::DaemonClosed { .. }
            | Error::SensorBusy { .. }
            | Error::SensorFailed(_)
    )
}

/// What the daemon answered to the hello.
#[derive(Debug, Clone)]
pub struct HelloReply {
    /// The trace being recorded ("" when none is: `recording` is false).
    pub trace: String,
    /// Samples this sensor already has in that trace.
    pub samples: u64,
    /// Whether a trace is open: frames sent while none is are discarded (protocol.md 5.1).
    pub recording: bool,
    /// Why nothing is recorded, when the daemon says (the disk guard's reason).
    pub stopped_reason: Option<String>,
    /// The daemon took the hello's sidecar files (`"files": true`, protocol.md 2.6).
    pub files: bool,
}

/// The opt-in hello fields (docs/protocol.md 2.1): what the hello asks of the daemon beyond
/// the channels. [`HelloFlags::default`] is the hello of protocol version 1 as first
/// released (no sequence numbers, no opt-ins).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HelloFlags {
    /// Frames carry a sequence number (`"seq": true`).
    pub seq: bool,
    /// At a clean shutdown the daemon sends the final durable count before it closes
    /// (`"final_ack": true`, protocol.md 6.1).
    pub final_ack: bool,
    /// The daemon drops frames repeating a sequence number already written in the trace
    /// (`"dedup": true`, needs `seq`, protocol.md 4.2).
    pub dedup: bool,
}

impl HelloFlags {
    /// Only `seq`: the hello of a driver that knows no opt-in.
    pub fn seq(seq: bool) -> HelloFlags {
        HelloFlags {
            seq,
            ..HelloFlags::default()
        }
    }
}

/// A durability reply (protocol.md 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durable {
    /// The sensor's durable count in the daemon's trace.
    pub durable: u64,
    /// Whether a trace was open: `false` means the samples sent meanwhile were discarded
    /// and `durable` says nothing about them.
    pub recording: bool,
    /// Why nothing is recorded, when the daemon says.
    pub stopped_reason: Option<String>,
    /// The trace `durable` counts in (`None`: none open, or a daemon that does not say).
    pub trace: Option<String>,
    /// The daemon's last line on this connection, at its shutdown (protocol.md 6.1).
    pub last: bool,
}

impl Durable {
    fn from_reply(reply: &Value) -> Option<Durable> {
        Some(Durable {
            durable: reply["durable"].as_u64()?,
            // Daemons before `recording` was added always recorded when they answered.
            recording: reply["recording"].as_bool().unwrap_or(true),
            stopped_reason: reply["stopped_reason"].as_str().map(str::to_string),
            trace: reply["trace"].as_str().map(str::to_string),
            last: reply["final"] == true,
        })
    }
}

/// What a driver says about samples it sends while the daemon records nothing: they are
/// discarded (protocol.md 5.1), and this says so with the daemon's reason when it gives one.
pub fn not_recording_message(socket: &Path, sensor: &str, why: Option<&str>) -> String {
    Error::NotRecording {
        socket: socket.to_path_buf(),
        sensor: sensor.to_string(),
        reason: why.map(str::to_string),
    }
    .to_string()
}

/// One sensor's connection to the daemon.
pub struct Driver {
    socket: PathBuf,
    sensor: String,
    stream: UnixStream,
    replies: BufReader<UnixStream>,
    /// Per data channel: `Some(n)` fixed-size of n bytes, `None` variable-size.
    sizes: Vec<Option<usize>>,
    flags: HelloFlags,
    frame: Vec<u8>,
    sent: u64,
    /// The daemon's final reply at its shutdown, once read.
    last: Option<Durable>,
    /// The hello's sidecar files went to the daemon (false: none, or a daemon that
    /// predates them refused them and the hello went again without).
    files_sent: bool,
}

/// The hello line for `sensor` with `meta`'s data channels (`ts` is implicit).
pub fn hello_line(sensor: &str, meta: &SensorMeta, seq: bool) -> Vec<u8> {
    hello_line_with(sensor, meta, HelloFlags::seq(seq))
}

/// [`hello_line`] with the opt-in fields `flags` asks for (only those set are written, so
/// a hello without opt-ins is exactly the first release's).
pub fn hello_line_with(sensor: &str, meta: &SensorMeta, flags: HelloFlags) -> Vec<u8> {
    let channels: Vec<Value> = meta
        .data_channels()
        .map(|(name, c)| {
            json!({"name": name, "format": c.format.as_str(), "type": c.dtype.code(),
                   "shape": c.shape, "desc": c.desc})
        })
        .collect();
    let mut hello =
        json!({"roverlog": 1, "sensor": sensor, "seq": flags.seq, "channels": channels});
    if flags.final_ack {
        hello["final_ack"] = json!(true);
    }
    if flags.dedup {
        hello["dedup"] = json!(true);
    }
    let mut line = serde_json::to_vec(&hello).expect("JSON of a value");
    line.push(b'\n');
    line
}

/// The bytes a connection starts with: [`hello_line_with`], declaring `files` when there are
/// any (protocol.md 2.6), followed by their bytes.
pub fn hello_bytes(
    sensor: &str,
    meta: &SensorMeta,
    flags: HelloFlags,
    files: &[SidecarFile],
) -> Vec<u8> {
    let mut line = hello_line_with(sensor, meta, flags);
    if files.is_empty() {
        return line;
    }
    let mut hello: Value = serde_json::from_slice(&line).expect("our own JSON");
    hello["files"] = sidecar::declaration(files);
    line = serde_json::to_vec(&hello).expect("JSON of a value");
    line.push(b'\n');
    sidecar::append_bytes(&mut line, files);
    line
}

/// Per data channel of `meta`: `Some(bytes)` for a fixed-size channel, `None` for a
/// variable-size one (what [`encode_frame`] checks samples against).
pub fn sample_sizes(meta: &SensorMeta) -> Vec<Option<usize>> {
    meta.data_channels()
        .map(|(_, c)| c.format.is_fixed_size().then(|| c.sample_bytes()))
        .collect()
}

/// Encodes one frame into `out` (appending; nothing is appended on error): `ts`, `seq` when
/// the hello declared sequence numbers, and one buffer per data channel, checked against
/// `sizes` (see [`sample_sizes`]). The error says what did not fit.
pub fn encode_frame(
    out: &mut Vec<u8>,
    sizes: &[Option<usize>],
    ts: f64,
    seq: Option<u64>,
    samples: &[&[u8]],
) -> std::result::Result<(), SampleMismatch> {
    if samples.len() != sizes.len() {
        return Err(SampleMismatch::Buffers {
            got: samples.len(),
            channels: sizes.len(),
        });
    }
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&ts.to_le_bytes());
    if let Some(seq) = seq {
        out.extend_from_slice(&seq.to_le_bytes());
    }
    for (k, (s, size)) in samples.iter().zip(sizes).enumerate() {
        match size {
            Some(n) if s.len() != *n => {
                out.truncate(at);
                return Err(SampleMismatch::Size {
                    channel: k,
                    got: s.len(),
                    expected: *n,
                });
            }
            Some(_) => {}
            None => out.extend_from_slice(&(s.len() as u32).to_le_bytes()),
        }
        out.extend_from_slice(s);
    }
    let len = out.len() - at - 4;
    let Ok(len) = u32::try_from(len) else {
        out.truncate(at);
        return Err(SampleMismatch::TooLong { len });
    };
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

impl Driver {
    /// Connects, sends the hello and reads the answer; a refusal is an error carrying the
    /// daemon's message.
    pub fn connect(
        socket: &Path,
        sensor: &str,
        meta: &SensorMeta,
        seq: bool,
    ) -> Result<(Driver, HelloReply)> {
        Driver::connect_with(socket, sensor, meta, HelloFlags::seq(seq))
    }

    /// [`Driver::connect`] with opt-in hello fields. A daemon older than an opt-in refuses it
    /// as an unknown key; the hello is then sent again without the opt-ins (see
    /// [`Driver::flags`] for what the daemon took).
    pub fn connect_with(
        socket: &Path,
        sensor: &str,
        meta: &SensorMeta,
        flags: HelloFlags,
    ) -> Result<(Driver, HelloReply)> {
        Driver::connect_full(socket, sensor, meta, flags, &[])
    }

    /// [`Driver::connect_with`] with sidecar files for the sensor's directory (protocol.md
    /// 2.6). A daemon that predates them refuses them as an unknown key; the hello is then
    /// sent again without them ([`Driver::files_sent`] says which).
    pub fn connect_full(
        socket: &Path,
        sensor: &str,
        meta: &SensorMeta,
        mut flags: HelloFlags,
        mut files: &[SidecarFile],
    ) -> Result<(Driver, HelloReply)> {
        // Each opt-in an older daemon names is left out once: at most three hellos.
        loop {
            match Driver::connect_once(socket, sensor, meta, flags, files) {
                Err(Error::Refused { reply, .. })
                    if (flags.final_ack || flags.dedup) && refuses_opt_in(&reply) =>
                {
                    flags = HelloFlags::seq(flags.seq);
                }
                Err(Error::Refused { reply, .. })
                    if !files.is_empty() && sidecar::refuses_files(&reply) =>
                {
                    files = &[];
                }
                r => return r,
            }
        }
    }

    fn connect_once(
        socket: &Path,
        sensor: &str,
        meta: &SensorMeta,
        flags: HelloFlags,
        files: &[SidecarFile],
    ) -> Result<(Driver, HelloReply)> {
        if meta.data_channels().next().is_none() {
            return Err(Error::NoDataChannel {
                sensor: sensor.to_string(),
            });
        }
        let io = |e| Error::io(socket, e);
        let stream = UnixStream::connect(socket).map_err(io)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(io)?;
        let replies = BufReader::new(stream.try_clone().map_err(io)?);
        let sizes = sample_sizes(meta);
        let mut d = Driver {
            socket: socket.to_path_buf(),
            sensor: sensor.to_string(),
            stream,
            replies,
            sizes,
            flags,
            frame: Vec::new(),
            sent: 0,
            last: None,
            files_sent: !files.is_empty(),
        };
        // A daemon that refuses the hello closes without reading the files that follow it:
        // its error line is the better answer than the failed write.
        let sent = d.write(&hello_bytes(sensor, meta, flags, files));
        let reply = match sent.and_then(|()| d.read_reply()) {
            // The one refusal protocol.md 7 documents word for word, and asks to retry.
            Err(Error::Refused {
                socket,
                sensor,
                reply,
            }) if reply == format!("sensor {sensor:?} already has a live connection") => {
                return Err(Error::SensorBusy {
                    socket,
                    sensor,
                    reply,
                })
            }
            r => r?,
        };
        let hello = HelloReply {
            trace: reply["trace"].as_str().unwrap_or_default().to_string(),
            recording: reply["trace"].is_string(),
            stopped_reason: reply["stopped_reason"].as_str().map(str::to_string),
            files: reply["files"] == true,
            samples: reply["samples"].as_u64().ok_or_else(|| {
                d.bad_reply(ReplyProblem::NoSamples {
                    reply: reply.to_string(),
                })
            })?,
        };
        Ok((d, hello))
    }

    fn bad_reply(&self, problem: ReplyProblem) -> Error {
        Error::BadReply {
            socket: self.socket.clone(),
            sensor: self.sensor.clone(),
            problem,
        }
    }

    /// The daemon's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The sensor this connection sends.
    pub fn sensor(&self) -> &str {
        &self.sensor
    }

    /// Whether the hello declared sequence numbers.
    pub fn seq(&self) -> bool {
        self.flags.seq
    }

    /// The hello's fields as the daemon took them (without the opt-ins an older daemon
    /// refused).
    pub fn flags(&self) -> HelloFlags {
        self.flags
    }

    /// Whether the hello carried its sidecar files (false when there were none, or an older
    /// daemon refused them).
    pub fn files_sent(&self) -> bool {
        self.files_sent
    }

    /// The daemon's final durability reply, if it sent one at its shutdown and this
    /// connection read it (protocol.md 6.1); taken once.
    pub fn take_last(&mut self) -> Option<Durable> {
        self.last.take()
    }

    /// How long to wait for a reply (default 60 s; a final fsync of a large backlog can take
    /// longer).
    pub fn set_reply_timeout(&mut self, timeout: Duration) -> Result<()> {
        self.stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| Error::io(&self.socket, e))
    }

    /// Frames sent on this connection.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Encodes one frame into `out` (appending): `ts`, the sequence number when the hello
    /// declared `seq`, and one buffer per data channel.
    pub fn encode(
        &self,
        out: &mut Vec<u8>,
        ts: f64,
        seq: Option<u64>,
        samples: &[&[u8]],
    ) -> Result<()> {
        let seq = self.flags.seq.then(|| seq.unwrap_or(self.sent));
        encode_frame(out, &self.sizes, ts, seq, samples).map_err(|problem| Error::BadSample {
            socket: Some(self.socket.clone()),
            sensor: self.sensor.clone(),
            problem,
        })
    }

    /// Sends one sample (one `write()`); `seq` defaults to the count of frames sent.
    pub fn send(&mut self, ts: f64, seq: Option<u64>, samples: &[&[u8]]) -> Result<()> {
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        let r = self.encode(&mut frame, ts, seq, samples);
        let r = r.and_then(|()| self.write(&frame));
        self.frame = frame;
        r?;
        self.sent += 1;
        Ok(())
    }

    /// Sends already encoded frames (from [`Driver::encode`]) in one `write()`.
    pub fn send_encoded(&mut self, frames: &[u8], count: u64) -> Result<()> {
        self.write(frames)?;
        self.sent += count;
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if let Err(e) = self.stream.write_all(bytes) {
            // The daemon refused something and closed: its reason is the better message.
            return Err(match self.read_reply() {
                Err(refusal) => refusal,
                Ok(_) => Error::io(&self.socket, e),
            });
        }
        Ok(())
    }

    /// Asks for durability; returns how many of this sensor's samples are on disk.
    pub fn sync(&mut self) -> Result<u64> {
        self.sync_reply().map(|d| d.durable)
    }

    /// [`Driver::sync`] with the whole reply: whether the daemon records at all, and why
    /// not. The daemon's final line at its shutdown is no answer to the request (it may not
    /// have read it): it is kept for [`Driver::take_last`] and this returns
    /// [`Error::DaemonClosed`].
    pub fn sync_reply(&mut self) -> Result<Durable> {
        self.write(&0u32.to_le_bytes())?;
        let reply = self.read_reply()?;
        Durable::from_reply(&reply).ok_or_else(|| {
            self.bad_reply(ReplyProblem::NoDurable {
                reply: reply.to_string(),
            })
        })
    }

    fn read_reply(&mut self) -> Result<Value> {
        let mut line = Vec::new();
        let n = (&mut self.replies)
            .take(MAX_REPLY)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(&self.socket, e))?;
        if n == 0 {
            return Err(Error::DaemonClosed {
                socket: self.socket.clone(),
                sensor: self.sensor.clone(),
            });
        }
        let reply: Value = serde_json::from_slice(&line).map_err(|error| {
            self.bad_reply(ReplyProblem::NotJson {
                error,
                reply: String::from_utf8_lossy(&line).into_owned(),
            })
        })?;
        if reply["ok"] == true && reply["final"] == true {
            // The daemon is shutting down: this is its last line (protocol.md 6.1).
            self.last = Durable::from_reply(&reply);
            Err(Error::DaemonClosed {
                socket: self.socket.clone(),
                sensor: self.sensor.clone(),
            })
        } else if reply["ok"] == true {
            Ok(reply)
        } else {
            let text = reply["error"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| reply.to_string());
            // A failed disk (protocol.md 6.2): the line says what is durable.
            if let (Some(durable), Some(trace)) =
                (reply["durable"].as_u64(), reply["trace"].as_str())
            {
                return Err(Error::SensorFailed(Box::new(SensorFailed {
                    socket: self.socket.clone(),
                    sensor: self.sensor.clone(),
                    reply: text,
                    durable,
                    trace: trace.to_string(),
                })));
            }
            Err(Error::Refused {
                socket: self.socket.clone(),
                sensor: self.sensor.clone(),
                reply: text,
            })
        }
    }
}

/// Whether a refusal is an older daemon's answer to an opt-in hello field it does not know
/// (its `unknown key` error names the field; protocol.md 8).
fn refuses_opt_in(msg: &str) -> bool {
    msg.starts_with("hello: unknown key \"final_ack\"")
        || msg.starts_with("hello: unknown key \"dedup\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use roverlog_core::format::{ChannelFormat, ChannelMeta, DType};

    #[test]
    fn hello_line_and_frame_encoding_follow_the_protocol() {
        let meta = SensorMeta {
            channels: vec![
                ("ts".into(), ChannelMeta::timestamps()),
                (
                    "acc".into(),
                    ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
                ),
            ],
        };
        let line = hello_line("imu", &meta, true);
        assert_eq!(line.last(), Some(&b'\n'));
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["sensor"], "imu");
        assert_eq!(v["seq"], true);
        assert_eq!(
            v["channels"].as_array().unwrap().len(),
            1,
            "ts is implicit: {v}"
        );
        assert_eq!(v["channels"][0]["type"], "f4");

        let files = [
            SidecarFile::new("lidar.json", b"{\"a\": 1}\n".to_vec()),
            SidecarFile::new("b.bin", vec![0u8, 10, 255]),
        ];
        let bytes = hello_bytes("imu", &meta, HelloFlags::seq(true), &files);
        let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
        let v: Value = serde_json::from_slice(&bytes[..nl]).unwrap();
        assert_eq!(
            v["files"],
            json!([{"name": "lidar.json", "bytes": 9}, {"name": "b.bin", "bytes": 3}])
        );
        assert_eq!(&bytes[nl + 1..], b"{\"a\": 1}\n\x00\n\xff");
        assert_eq!(
            hello_bytes("imu", &meta, HelloFlags::seq(true), &[]),
            line,
            "no files: the hello of before"
        );

        let only_ts = SensorMeta {
            channels: vec![("ts".into(), ChannelMeta::timestamps())],
        };
        let err = Driver::connect(Path::new("/nonexistent.sock"), "x", &only_ts, false)
            .err()
            .unwrap();
        assert!(err.to_string().contains("no data channel"), "{err}");
    }

    /// A daemon that predates `files` (its refusal word for word, as `dedup`'s was) gets
    /// the hello again without them, and the driver knows they were not sent.
    #[test]
    fn files_an_older_daemon_refuses_are_left_out() {
        use std::os::unix::net::UnixListener;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("ingest.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let old_daemon = std::thread::spawn(move || {
            let mut hellos = Vec::new();
            for answer in [
                "{\"ok\": false, \"error\": \"hello: unknown key \\\"files\\\" (expected roverlog, sensor, channels, seq, final_ack, dedup)\"}\n",
                "{\"ok\": true, \"trace\": \"t\", \"samples\": 0}\n",
            ] {
                let (mut s, _) = listener.accept().unwrap();
                let mut line = Vec::new();
                BufReader::new(s.try_clone().unwrap())
                    .read_until(b'\n', &mut line)
                    .unwrap();
                hellos.push(serde_json::from_slice::<Value>(&line).unwrap());
                s.write_all(answer.as_bytes()).unwrap();
            }
            hellos
        });
        let meta = SensorMeta {
            channels: vec![(
                "x".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![1], ""),
            )],
        };
        let files = [SidecarFile::new("lidar.json", b"{}".to_vec())];
        let (d, reply) =
            Driver::connect_full(&socket, "lidar", &meta, HelloFlags::default(), &files).unwrap();
        assert!(!d.files_sent());
        assert!(!reply.files);
        let hellos = old_daemon.join().unwrap();
        assert_eq!(
            hellos[0]["files"],
            json!([{"name": "lidar.json", "bytes": 2}])
        );
        assert!(hellos[1].get("files").is_none(), "{}", hellos[1]);
    }
}
