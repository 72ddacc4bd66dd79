//! `<trace>/_roverlog/events.jsonl`, the daemon's log of what happened while recording: one
//! JSON object per line, `{"t": <epoch seconds>, "event": <kind>, ...fields}`. It is part of
//! a trace on disk (copied with it, exported to MCAP, plotted), so its lines are typed here,
//! beside the rest of the format, for the daemon that writes them and every tool that reads
//! them. The directory starts with `_`, so upstream readers skip it.
//!
//! Reading is forgiving where a trace from another version needs it and strict elsewhere:
//! a line of a kind this version does not know (or of a known kind whose fields it cannot
//! read) is kept as [`Event::Other`] holding its JSON; a last line without its newline is a
//! write a crash tore, and is skipped; any other line that is not an event is an error
//! naming the file and the line.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The event log's directory inside a trace.
pub const EVENTS_DIR: &str = "_roverlog";
/// The event log's file name.
pub const EVENTS_FILE: &str = "events.jsonl";
/// The longest line a reader accepts, newline excluded. The daemon's longest lines are
/// `mark` texts and error messages, bounded by its control line limit far below this.
pub const MAX_EVENT_LINE: usize = 1 << 20;

/// `<trace>/_roverlog/events.jsonl`.
pub fn events_path(trace: &Path) -> PathBuf {
    trace.join(EVENTS_DIR).join(EVENTS_FILE)
}

/// One line of the log: when, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct EventLine {
    /// When the daemon wrote it, epoch seconds (its clock, not a driver's).
    pub t: f64,
    pub event: Event,
}

/// What happened. Written internally tagged: `"event": "<kind>"` then the variant's fields,
/// in the order declared here (tools and tests read the lines as text too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Recording into `trace` began: a new trace, a rotation's next part (`from`), or a
    /// crashed trace continued (`reason` `resume`).
    Start {
        trace: String,
        /// `command`, `autostart`, `trigger`, `resume`, or why it rotated (`command`,
        /// `SIGHUP`, `rotate_seconds`, `rotate_bytes`).
        reason: String,
        /// Written as `null` when the trace has none.
        #[serde(default)]
        label: Option<String>,
        /// The sensors attached when it began (others attach later).
        #[serde(default)]
        sensors: Vec<String>,
        /// The trace a rotation left.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
    },
    /// The trace closed: closes the last `start`, whatever ended it.
    Stop {
        trace: String,
        /// `command`, `shutdown`, `trigger_after`, `rotate`, `crash`, or the disk guard's text.
        reason: String,
        /// Each sensor's count in this trace (absent in rotated traces before 2026-11-25).
        #[serde(default)]
        sensors: Counts,
    },
    /// Written to the trace being left, before its `stop`: the next part is `to`.
    Rotate { to: String, reason: String },
    /// A user's text (`ctl mark`, the dashboard).
    Mark { text: String },
    /// A health alarm was raised at `start` (`sensor` empty for trace-wide ones such as
    /// `disk_low`); `details` are the alarm's own measurements (`expected_hz`, `rate_hz`...).
    Alarm {
        alarm: String,
        sensor: String,
        start: f64,
        #[serde(flatten)]
        details: Map<String, Value>,
    },
    /// The alarm raised at `start` cleared at `end`.
    AlarmClear {
        alarm: String,
        sensor: String,
        start: f64,
        end: f64,
    },
    /// A sensor's clock went from `from` to `to`: a sample's `ts` went backwards (`frame`
    /// is that sample), or the driver's clock moved against the daemon's (`kind` `offset`;
    /// `from`/`to` are the receive-minus-sample offsets; `moves`: how many moves past the
    /// threshold this one event stands for, as the daemon writes at most one per sensor per
    /// `CLOCK_STEP_HOLD` of its health task).
    ClockStep {
        sensor: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<ClockStepKind>,
        from: f64,
        to: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        moves: Option<u64>,
    },
    /// `missing` sequence numbers between `after_seq` and `seq` (frame `frame`, sample time `ts`).
    Gap {
        sensor: String,
        frame: u64,
        missing: u64,
        after_seq: u64,
        seq: u64,
        ts: f64,
    },
    /// The sequence number went back (the driver restarted its counter).
    SeqReset {
        sensor: String,
        frame: u64,
        after_seq: u64,
        seq: u64,
    },
    /// `count` frames repeating sequence numbers `first_seq ..= last_seq` this sensor had
    /// already written in this trace, from frame `first_frame` on: dropped, not written
    /// twice (a driver resending after a reconnect; the hello opted in with `dedup`).
    Repeat {
        sensor: String,
        count: u64,
        first_frame: u64,
        first_seq: u64,
        last_seq: u64,
    },
    /// `count` frames dropped (queue full), from frame `first_frame`, sample times
    /// `from_ts` to `to_ts`.
    Drop {
        sensor: String,
        count: u64,
        first_frame: u64,
        from_ts: f64,
        to_ts: f64,
    },
    /// The stream ended inside frame `frame`, `bytes` of it received (not recorded).
    PartialFrame {
        sensor: String,
        frame: u64,
        bytes: u64,
    },
    /// The snapshot ring's `frames` frames were written at a trigger.
    Snapshot { sensor: String, frames: u64 },
    /// `frames` samples of `sensor` had their `lzmaf` channels stored uncompressed (in the
    /// same `.xz` framing) because compression fell behind; written when such a run ends,
    /// every 10 s during one, and when the trace closes. `roverlog compact` recompresses them.
    LzmafStored { sensor: String, frames: u64 },
    /// A sensor's writer failed; the other sensors keep recording.
    Error { sensor: String, error: String },
    /// A sensor's files were repaired to `len` samples (after a crash, or `after` a write
    /// failure); `cuts` and `left_alone` are the lines `roverlog recover` prints.
    Recovered {
        sensor: String,
        len: u64,
        cuts: Vec<String>,
        left_alone: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
    },
    /// Found at the next start: the daemon ended without stopping this trace.
    Crash { note: String },
    /// A line of a kind this version does not know (a newer writer's), or of a known kind
    /// whose fields it cannot read: the line's object without `t`, `event` included.
    #[serde(untagged)]
    Other(Map<String, Value>),
}

/// What a `clock_step` measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockStepKind {
    /// The median receive-minus-sample offset moved past the health threshold.
    Offset,
}

impl Event {
    /// The `event` key of its line.
    pub fn kind(&self) -> &str {
        match self {
            Event::Start { .. } => "start",
            Event::Stop { .. } => "stop",
            Event::Rotate { .. } => "rotate",
            Event::Mark { .. } => "mark",
            Event::Alarm { .. } => "alarm",
            Event::AlarmClear { .. } => "alarm_clear",
            Event::ClockStep { .. } => "clock_step",
            Event::Gap { .. } => "gap",
            Event::SeqReset { .. } => "seq_reset",
            Event::Repeat { .. } => "repeat",
            Event::Drop { .. } => "drop",
            Event::PartialFrame { .. } => "partial_frame",
            Event::Snapshot { .. } => "snapshot",
            Event::LzmafStored { .. } => "lzmaf_stored",
            Event::Error { .. } => "error",
            Event::Recovered { .. } => "recovered",
            Event::Crash { .. } => "crash",
            Event::Other(m) => m.get("event").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

/// A sensor's final count in a trace it left, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Count {
    Samples { samples: u64 },
    Error { error: String },
}

/// Every sensor's [`Count`], in the order they were closed (a JSON object keyed by sensor).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(pub Vec<(String, Count)>);

impl Counts {
    /// The count of `sensor`, if it has one.
    pub fn get(&self, sensor: &str) -> Option<&Count> {
        self.0.iter().find(|(n, _)| n == sensor).map(|(_, c)| c)
    }
}

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Counts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of sensor counts")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Counts, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = m.next_entry()? {
                    v.push(e);
                }
                Ok(Counts(v))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// `{"t": ..., "event": ..., ...}`: `t` first, as the daemon has always written it.
impl Serialize for EventLine {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Line<'a> {
            t: f64,
            #[serde(flatten)]
            event: &'a Event,
        }
        Line {
            t: self.t,
            event: &self.event,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for EventLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut m = Map::<String, Value>::deserialize(d)?;
        let t = match m.shift_remove("t") {
            Some(t) => t
                .as_f64()
                .ok_or_else(|| D::Error::custom(format!("`t` is {t}, not a number")))?,
            None => return Err(D::Error::missing_field("t")),
        };
        if !m.get("event").is_some_and(Value::is_string) {
            return Err(D::Error::custom("no `event` string"));
        }
        // Never fails for an object: what no variant reads is `Other`.
        let event = Event::deserialize(Value::Object(m)).map_err(D::Error::custom)?;
        Ok(EventLine { t, event })
    }
}

impl EventLine {
    /// Its line in the log, without the newline.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an event line is JSON")
    }
}

/// The events of a log, line by line; see the module's rules for what is an error.
pub struct EventReader<R> {
    path: PathBuf,
    reader: R,
    line: u64,
    failed: bool,
}

impl EventReader<BufReader<std::fs::File>> {
    /// Reads `<trace>/_roverlog/events.jsonl`.
    pub fn open(trace: &Path) -> Result<Self> {
        let path = events_path(trace);
        let file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        Ok(EventReader::new(path, BufReader::new(file)))
    }
}

impl<R: BufRead> EventReader<R> {
    /// Reads lines from `reader`; `path` names them in errors.
    pub fn new(path: impl Into<PathBuf>, reader: R) -> Self {
        EventReader {
            path: path.into(),
            reader,
            line: 0,
            failed: false,
        }
    }

    /// Drops the rest of an over-long line, through its newline.
    fn skip_line(&mut self) -> std::io::Result<()> {
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let n = buf.len();
                    self.reader.consume(n);
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<EventLine>;

    fn next(&mut self) -> Option<Self::Item> {
        let io = |p: &Path, e| Some(Err(Error::io(p, e)));
        loop {
            if self.failed {
                return None;
            }
            let mut buf = Vec::new();
            let limit = MAX_EVENT_LINE as u64 + 1; // the newline
            match (&mut self.reader).take(limit).read_until(b'\n', &mut buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    self.failed = true;
                    return io(&self.path, e);
                }
            }
            self.line += 1;
            let line = self.line;
            match buf.pop() {
                Some(b'\n') => {}
                _ if buf.len() >= MAX_EVENT_LINE => {
                    if let Err(e) = self.skip_line() {
                        self.failed = true;
                        return io(&self.path, e);
                    }
                    return Some(Err(Error::EventLineTooLong {
                        path: self.path.clone(),
                        line,
                        limit: MAX_EVENT_LINE,
                    }));
                }
                // The end of the file without a newline: a write a crash tore.
                _ => return None,
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(
                serde_json::from_slice(&buf).map_err(|error| Error::EventLine {
                    path: self.path.clone(),
                    line,
                    error,
                }),
            );
        }
    }
}

/// Every event of a trace, in order; a trace without an event log has none. The first line
/// that is not an event is the error.
pub fn read_events(trace: &Path) -> Result<Vec<EventLine>> {
    match EventReader::open(trace) {
        Ok(r) => r.collect(),
        Err(Error::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(Vec::new())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
