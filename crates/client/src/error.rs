//! The client's errors, as redb does them: small enums per operation ([`ReplyProblem`] for a
//! daemon's reply, [`ResumeError`] for a reconnect, [`PlayError`] for a replay's options)
//! converting with `From` into the crate's [`Error`]; the dataset a replay reads fails with
//! roverlog-core's error ([`Error::Core`]).
//!
//! The messages read like the `protocol error: ...` lines the client printed when these
//! variants lived in roverlog-core: the driver's callers (the Python binding, `roverlog
//! replay`, the drivers) print them as they are.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Result alias of the client.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to a daemon.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error reading the dataset a replay sends, or another roverlog-core error.
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),

    /// An I/O error on the daemon's socket (connect, write, read).
    #[error("{}: {error}", socket.display())]
    Io {
        socket: PathBuf,
        error: std::io::Error,
    },

    /// The daemon closed a driver's connection without an error line: it is stopping or
    /// restarting (docs/protocol.md 6). A driver reconnects with back-off.
    #[error("protocol error: {} sensor {sensor:?}: connection closed without a reply", socket.display())]
    DaemonClosed { socket: PathBuf, sensor: String },

    /// A hello refused because an older connection of the sensor is still open
    /// (docs/protocol.md 7): the daemon has not noticed it closing yet. A driver retries
    /// after a back-off. `reply`: the daemon's error line, word for word.
    #[error("protocol error: {} sensor {sensor:?}: {reply}", socket.display())]
    SensorBusy {
        socket: PathBuf,
        sensor: String,
        reply: String,
    },

    /// The daemon answered a driver with an error line (docs/protocol.md 6) and closed.
    /// `reply`: the daemon's error line, word for word.
    #[error("protocol error: {} sensor {sensor:?}: {reply}", socket.display())]
    Refused {
        socket: PathBuf,
        sensor: String,
        reply: String,
    },

    /// The sensor's files failed on the daemon's disk (a write or fsync error;
    /// docs/protocol.md 6.2) and the daemon closed the connection.
    #[error("{0}")]
    SensorFailed(Box<SensorFailed>),

    /// A reply line a driver cannot use.
    #[error("protocol error: {} sensor {sensor:?}: {problem}", socket.display())]
    BadReply {
        socket: PathBuf,
        sensor: String,
        problem: ReplyProblem,
    },

    /// A sensor declared with no data channel: there would be nothing to send.
    #[error("protocol error: sensor {sensor:?}: no data channel to send (\"ts\" is implicit)")]
    NoDataChannel { sensor: String },

    /// A sample that does not fit the channels its sensor declared; nothing of it was sent.
    /// `socket` is named when the sample went to one connection.
    #[error("protocol error: {}sensor {sensor:?}: {problem}",
            socket.as_ref().map(|s| format!("{} ", s.display())).unwrap_or_default())]
    BadSample {
        socket: Option<PathBuf>,
        sensor: String,
        problem: SampleMismatch,
    },

    /// After a reconnect, the daemon's count of the sensor's samples does not fit what the
    /// driver sent and retains.
    #[error(transparent)]
    Resume(#[from] ResumeError),

    /// No daemon answered at `socket` within the driver's connect timeout; `last` is the
    /// last attempt's error, `missing` whether the socket did not exist at all.
    #[error("no roverlog daemon at {}: {} (waited {:.1} s; is the daemon running, and is this its ingest_socket?)",
            socket.display(), Reason(last), waited.as_secs_f64())]
    NoDaemon {
        socket: PathBuf,
        waited: Duration,
        last: Box<Error>,
        missing: bool,
    },

    /// A write made in the background failed; every later sample is refused with it.
    #[error("protocol error: an earlier write failed: {0}")]
    EarlierWriteFailed(Arc<Error>),

    /// The daemon records nothing (protocol.md 5.1): the samples sent meanwhile were
    /// discarded. `reason`: the daemon's, when it gives one.
    #[error("the roverlog daemon at {} is not recording ({}): samples of sensor {sensor:?} are discarded until a trace starts (`roverlog ctl start`)",
            socket.display(),
            reason.as_ref().map(|r| format!("recording stopped: {r}"))
                .unwrap_or_else(|| "no trace is open: stopped by a command, or autostart is off".into()))]
    NotRecording {
        socket: PathBuf,
        sensor: String,
        reason: Option<String>,
    },

    /// At the end of a replay, the daemon confirms fewer durable samples than were sent.
    #[error("protocol error: sensor {sensor:?}: daemon confirms {durable} durable samples, expected {expected}")]
    NotDurable {
        sensor: String,
        durable: u64,
        expected: u64,
    },

    /// The caller's `waiting` callback (`ResilientDriver::connect_notify`) ended the wait for
    /// the daemon; the caller keeps its own reason.
    #[error("stopped waiting for the roverlog daemon")]
    WaitAborted,

    /// Replay options that cannot be played.
    #[error(transparent)]
    Play(#[from] PlayError),
}

impl Error {
    /// An I/O error on `socket`.
    pub fn io(socket: impl Into<PathBuf>, error: std::io::Error) -> Self {
        Error::Io {
            socket: socket.into(),
            error,
        }
    }

    /// The operating system's error behind this one, if there is one.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Io { error, .. } => Some(error),
            Error::Core(e) => e.io_error(),
            Error::EarlierWriteFailed(inner) => inner.io_error(),
            Error::NoDaemon { last, .. } => last.io_error(),
            _ => None,
        }
    }
}

/// [`Error::NoDaemon`]'s last attempt: an I/O error without its socket (the message names
/// it already), anything else as it is.
struct Reason<'a>(&'a Error);

impl std::fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Error::Io { error, .. } => write!(f, "{error}"),
            e => write!(f, "{e}"),
        }
    }
}

/// What [`Error::SensorFailed`] holds (boxed: the error stays small).
#[derive(Debug, thiserror::Error)]
#[error("protocol error: {} sensor {sensor:?}: {reply} ({durable} samples of trace {trace:?} are durable; the ones sent after them were not kept)", socket.display())]
pub struct SensorFailed {
    pub socket: PathBuf,
    pub sensor: String,
    /// The daemon's error line, word for word.
    pub reply: String,
    /// The sensor's samples of `trace` on stable storage; the trace holds no more of them.
    pub durable: u64,
    pub trace: String,
}

/// Why a daemon's reply line cannot be used ([`Error::BadReply`]); `reply` is the line.
#[derive(Debug, thiserror::Error)]
pub enum ReplyProblem {
    /// Not JSON.
    #[error("reply is not JSON ({error}): {reply}")]
    NotJson {
        error: serde_json::Error,
        reply: String,
    },
    /// A hello reply without `samples`.
    #[error("hello reply without \"samples\": {reply}")]
    NoSamples { reply: String },
    /// A durability reply without `durable`.
    #[error("durability reply without \"durable\": {reply}")]
    NoDurable { reply: String },
}

/// After a reconnect into the same trace, the daemon's count of the sensor's samples does
/// not fit what the driver sent and retains.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The daemon counts fewer samples of the sensor than it had before the driver's first
    /// frame.
    #[error("protocol error: sensor {sensor:?}: the daemon reports {samples} samples, fewer than it had when we started")]
    Behind { sensor: String, samples: u64 },
    /// The daemon counts more of the driver's samples than it sent.
    #[error("protocol error: sensor {sensor:?}: the daemon holds {have} samples of ours but we sent {sent}")]
    Ahead {
        sensor: String,
        have: u64,
        sent: u64,
    },
    /// The daemon lacks samples the driver's full retain buffer had already forgotten: they
    /// cannot be resent.
    #[error("protocol error: sensor {sensor:?}: the daemon lost samples {have}..{retained_from} which were no longer retained (raise max_retained or sync more often)")]
    RetainedLost {
        sensor: String,
        have: u64,
        retained_from: u64,
    },
}

/// Replay options that cannot be played (`roverlog replay --rate/--start/--duration`).
#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    #[error("config: --rate must be a positive number, got {rate}")]
    Rate { rate: f64 },
    #[error("config: --start must be a number of seconds, 0 or more, got {start}")]
    Start { start: f64 },
    #[error("config: --duration must be a number of seconds, 0 or more, got {duration}")]
    Duration { duration: f64 },
    /// A sample due later than a `Duration` can wait (a huge gap at a tiny rate).
    #[error("config: --rate {rate}: the sample at {ts} would be due {after} s after the start, more than can be waited for")]
    Due { rate: f64, ts: f64, after: f64 },
}

/// What about a sample did not fit its sensor's channels ([`Error::BadSample`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleMismatch {
    /// One buffer per data channel is needed.
    #[error("{got} channel buffers for {channels} channels")]
    Buffers { got: usize, channels: usize },
    /// A fixed-size channel's buffer of the wrong length (`channel` counts data channels).
    #[error("channel {channel}: {got} bytes, expected {expected}")]
    Size {
        channel: usize,
        got: usize,
        expected: usize,
    },
    /// A frame longer than its 32-bit length field can announce.
    #[error("frame of {len} bytes")]
    TooLong { len: usize },
}
