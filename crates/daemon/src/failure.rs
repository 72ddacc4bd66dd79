//! Why a sensor's writer failed, and what its replies say instead of a count.
//!
//! A failure is remembered (the sensor's files are not trusted again until a new trace opens
//! new ones) and shown in `status`, in the event log and in the replies to drivers and
//! control commands, always as its text; the values stay typed so that code asks which
//! failure it is (a full disk stops the recording) instead of reading the text.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a sensor failed.
#[derive(Debug)]
pub enum SensorFailure {
    /// A write of the sensor's files failed (`what`: append, flush, fsync, finish). Shared
    /// with the reply of the fsync that met it ([`WriterError::Sync`]).
    Io {
        what: &'static str,
        source: Arc<roverlog_core::Error>,
    },
    /// Its directory `dir` in a trace could not be created or resumed.
    Open {
        dir: PathBuf,
        source: roverlog_core::Error,
    },
    /// Its directory `dir` in a trace holds a sidecar file other than the connection's
    /// (docs/protocol.md 2.6): the sensor is not resumed there.
    Sidecar {
        dir: PathBuf,
        source: crate::sidecar::SidecarError,
    },
    /// A bug: the writer thread panicked; `panic`: the text the panic carried (a panic's own
    /// payload, not a sentence of ours).
    Panic { panic: String },
    /// A bug: the compression of one of its frames panicked.
    Compress(crate::compress::CompressError),
}

impl SensorFailure {
    /// The format library's error behind the failure, if there is one (a panic has none).
    pub fn error(&self) -> Option<&roverlog_core::Error> {
        match self {
            SensorFailure::Io { source, .. } => Some(source),
            SensorFailure::Open { source, .. } => Some(source),
            SensorFailure::Sidecar { .. }
            | SensorFailure::Panic { .. }
            | SensorFailure::Compress(_) => None,
        }
    }
}

impl fmt::Display for SensorFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SensorFailure::Io { what, source } => write!(f, "{what} failed: {source}"),
            SensorFailure::Open { dir, source } => {
                write!(f, "opening {}: {source}", dir.display())
            }
            SensorFailure::Sidecar { dir, source } => {
                write!(f, "opening {}: {source}", dir.display())
            }
            SensorFailure::Panic { panic } => {
                write!(f, "internal error: the writer panicked: {panic}")
            }
            SensorFailure::Compress(e) => write!(f, "internal error: the writer panicked: {e}"),
        }
    }
}

impl std::error::Error for SensorFailure {}

/// A writer's answer when it has no count to give.
#[derive(Debug, Clone)]
pub enum WriterError {
    /// The sensor has failed; every reply until its files are reopened says why.
    Failed(Arc<SensorFailure>),
    /// The fsync asked for failed with this error (the sensor failed with it as well).
    Sync(Arc<roverlog_core::Error>),
    /// The writer thread of `sensor` is gone: nothing will answer.
    Ended { sensor: String },
    /// A connection's sidecar files could not be put into the open trace's sensor directory
    /// (docs/protocol.md 2.6); the sensor goes on.
    Sidecar(Arc<crate::sidecar::SidecarError>),
}

impl WriterError {
    /// The writer of `sensor` has ended.
    pub fn ended(sensor: &str) -> WriterError {
        WriterError::Ended {
            sensor: sensor.to_string(),
        }
    }
}

impl fmt::Display for WriterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriterError::Failed(failure) => write!(f, "{failure}"),
            WriterError::Sync(e) => write!(f, "{e}"),
            WriterError::Ended { sensor } => write!(f, "sensor {sensor:?}: writer has ended"),
            WriterError::Sidecar(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WriterError {}
