//! The control commands as types: a [`Command`] is parsed once where it arrives (the control
//! socket, the dashboard's `POST /api/command`) and the recorder answers with typed results
//! or a [`Refusal`]; [`reply`] turns either into the protocol's JSON reply line
//! (`{"ok": true, ...}` / `{"ok": false, "error": "..."}`, docs/protocol.md).
//!
//! The wire shape is serde's internally tagged form (`{"cmd": "start", "label": "x"}`);
//! [`Command::parse`] reads it by hand rather than through `Deserialize` so that every
//! malformed command gets the error text the protocol has always given.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest `mark` text.
pub const MAX_MARK_BYTES: usize = 4096;
/// How long a `trigger` records after it when the command does not say.
pub const DEFAULT_AFTER: Duration = Duration::from_secs(10);
/// Longest `after` a `trigger` may ask for (a day).
const MAX_AFTER_S: f64 = 86_400.0;

/// One control command (docs/protocol.md, "Control socket").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase")]
pub enum Command {
    Status,
    /// Without a label: the config's `label`.
    Start {
        label: Option<String>,
    },
    Stop,
    /// Without a label: the current trace's.
    Rotate {
        label: Option<String>,
    },
    Mark {
        text: String,
    },
    /// `after`: seconds to record after the trigger ([`DEFAULT_AFTER`] when absent).
    Trigger {
        label: Option<String>,
        after: Option<f64>,
    },
    Snapshot {
        on: bool,
    },
}

impl Command {
    /// Reads a command from its JSON; the refusal is the reply's error.
    pub fn parse(v: &Value) -> Result<Command, Refusal> {
        let label = match v.get("label") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(Refusal::LabelNotString),
        };
        let Some(name) = v.get("cmd").and_then(Value::as_str) else {
            return Err(Refusal::NoCommand);
        };
        Ok(match name {
            "status" => Command::Status,
            "start" => Command::Start { label },
            "stop" => Command::Stop,
            "rotate" => Command::Rotate { label },
            "snapshot" => match v.get("on").and_then(Value::as_bool) {
                Some(on) => Command::Snapshot { on },
                None => return Err(Refusal::SnapshotNeedsOn),
            },
            "trigger" => {
                let after = match v.get("after") {
                    None | Some(Value::Null) => None,
                    Some(a) => match a.as_f64().filter(|s| (0.0..=MAX_AFTER_S).contains(s)) {
                        Some(s) => Some(s),
                        None => return Err(Refusal::BadAfter(a.clone())),
                    },
                };
                Command::Trigger { label, after }
            }
            "mark" => match v.get("text").and_then(Value::as_str) {
                Some(t) if t.len() <= MAX_MARK_BYTES => Command::Mark { text: t.into() },
                Some(_) => return Err(Refusal::MarkTooLong),
                None => return Err(Refusal::MarkNeedsText),
            },
            other => return Err(Refusal::UnknownCommand(other.into())),
        })
    }

    /// Its `cmd` name.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Status => "status",
            Command::Start { .. } => "start",
            Command::Stop => "stop",
            Command::Rotate { .. } => "rotate",
            Command::Mark { .. } => "mark",
            Command::Trigger { .. } => "trigger",
            Command::Snapshot { .. } => "snapshot",
        }
    }

    /// Whether a monitor (config `control_monitor_*`) may run it: only `status` reads.
    pub fn monitor_may_run(&self) -> bool {
        matches!(self, Command::Status)
    }

    /// The trigger's `after` as a duration.
    pub fn after(after: Option<f64>) -> Duration {
        after.map_or(DEFAULT_AFTER, Duration::from_secs_f64)
    }
}

/// Why a command (or a recorder operation) was not done: the reply's `error`.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("\"label\" must be a string")]
    LabelNotString,
    #[error(
        "expected {{\"cmd\": \"status\" | \"start\" | \"stop\" | \"rotate\" | \"mark\" | \"trigger\"}}"
    )]
    NoCommand,
    #[error("unknown command {0:?} (status, start, stop, rotate, mark, trigger, snapshot)")]
    UnknownCommand(String),
    #[error("snapshot needs \"on\": true or false")]
    SnapshotNeedsOn,
    #[error("\"after\" must be seconds from 0 to 86400, not {0}")]
    BadAfter(Value),
    #[error("mark text is over 4096 bytes")]
    MarkTooLong,
    #[error("mark needs \"text\" (a string)")]
    MarkNeedsText,
    /// A monitor peer asked for more than `status`; `cmd` is the `cmd` value as sent (JSON).
    #[error("{cmd} is for operators; this peer may only ask for status (control_monitor_*)")]
    OperatorsOnly { cmd: String },
    #[error("cannot read peer credentials: {0}")]
    PeerCredentials(std::io::Error),
    #[error("peer uid {uid} gid {gid} is in neither control_operator_* nor control_monitor_*")]
    NoRole { uid: u32, gid: u32 },
    #[error("not recording")]
    NotRecording,
    #[error("already recording trace {trace}")]
    AlreadyRecording { trace: String },
    #[error("already recording trace {trace}, not started by a trigger: stop it first")]
    NotTriggered { trace: String },
    #[error("trigger needs snapshot mode (config \"snapshot\": true, or {{\"cmd\": \"snapshot\", \"on\": true}}): no pre-trigger ring is kept")]
    NoSnapshotMode,
    #[error("this daemon has no snapshot ring")]
    NoSnapshotRing,
    /// The disk guard's reason (see `Recorder::disk_low`).
    #[error("{0}")]
    DiskLow(String),
    /// Creating or opening the trace failed.
    #[error(transparent)]
    Failed(#[from] roverlog_core::Error),
}

/// `start` (and `rotate`, `resume`): the trace now recording.
#[derive(Debug, Clone, Serialize)]
pub struct Started {
    pub trace: String,
    pub dir: PathBuf,
}

/// Each sensor's count in the trace a `stop` closed: the same values its `stop` event holds.
pub use roverlog_core::format::events::{Count, Counts};

/// `stop`: the trace closed and each sensor's final count.
#[derive(Debug, Clone, Serialize)]
pub struct Stopped {
    pub trace: String,
    pub sensors: Counts,
}

/// `mark`: the trace the mark went into.
#[derive(Debug, Clone, Serialize)]
pub struct Marked {
    pub trace: String,
}

/// `trigger`: a trace started (as `start`) or the stop of the recording one moved.
#[derive(Debug, Clone, Serialize)]
pub struct Triggered {
    pub trace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub extended: bool,
    pub after_s: f64,
}

/// The reply to a command: `{"ok": true}` followed by `done`'s fields, or the refusal.
pub fn reply<T: Serialize>(r: Result<T, Refusal>) -> Value {
    match r {
        Ok(done) => {
            let mut m = serde_json::Map::new();
            m.insert("ok".into(), true.into());
            match serde_json::to_value(done).expect("a reply as JSON") {
                Value::Object(f) => m.extend(f),
                Value::Null => {}
                other => panic!("a reply is an object, not {other}"),
            }
            Value::Object(m)
        }
        Err(e) => refused(e),
    }
}

/// `{"ok": false, "error": ...}`.
pub fn refused(why: impl std::fmt::Display) -> Value {
    serde_json::json!({"ok": false, "error": why.to_string()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_wire_form_round_trips_through_serde() {
        for c in [
            Command::Status,
            Command::Start {
                label: Some("x".into()),
            },
            Command::Rotate { label: None },
            Command::Mark { text: "m".into() },
            Command::Trigger {
                label: None,
                after: Some(2.5),
            },
            Command::Snapshot { on: true },
        ] {
            let v = serde_json::to_value(&c).unwrap();
            assert_eq!(Command::parse(&v).unwrap(), c, "{v}");
            assert_eq!(serde_json::from_value::<Command>(v).unwrap(), c);
        }
    }

    #[test]
    fn malformed_commands_get_the_protocol_s_texts() {
        let e = |v: Value| Command::parse(&v).unwrap_err().to_string();
        assert_eq!(
            e(json!({"cmd": "status", "label": 3})),
            "\"label\" must be a string"
        );
        assert_eq!(
            e(json!({"cmd": "nope"})),
            "unknown command \"nope\" (status, start, stop, rotate, mark, trigger, snapshot)"
        );
        assert_eq!(
            e(json!({})),
            "expected {\"cmd\": \"status\" | \"start\" | \"stop\" | \"rotate\" | \"mark\" | \"trigger\"}"
        );
        assert_eq!(
            e(json!({"cmd": "trigger", "after": -1})),
            "\"after\" must be seconds from 0 to 86400, not -1"
        );
        assert_eq!(
            e(json!({"cmd": "mark", "text": "x".repeat(4097)})),
            "mark text is over 4096 bytes"
        );
        assert_eq!(
            reply(Ok(Marked { trace: "t".into() })),
            json!({"ok": true, "trace": "t"})
        );
    }
}
