//! Why the daemon ends a driver's connection with an error line (docs/protocol.md 6). The
//! text of each value is that line's `error`, which drivers and their users read: it changes
//! only with the protocol. Connections that end without an error (end of stream, the drain at
//! shutdown) are not errors at all.

use std::fmt;
use std::time::Duration;

use crate::failure::WriterError;
use crate::protocol::{FrameError, HelloError};
use crate::recording::AttachError;

/// What ended a connection.
#[derive(Debug)]
pub enum ConnError {
    /// `max_connections` connections are open already.
    TooManyConnections,
    PeerCredentials(std::io::Error),
    /// The peer is in neither `allow_uids` nor `allow_gids`.
    PeerNotAllowed {
        uid: u32,
        gid: u32,
    },
    Read(std::io::Error),
    Write(std::io::Error),
    /// No newline within `max_hello_bytes`.
    HelloTooLong {
        limit: usize,
    },
    HelloCut,
    /// No whole hello line within `hello_timeout_ms`.
    HelloTimeout(Duration),
    Hello(HelloError),
    /// The connection ended before the bytes of the hello's files (docs/protocol.md 2.6).
    FilesCut {
        got: usize,
        expected: usize,
    },
    /// The hello's files could not be put into the sensor's directory of the open trace.
    Files {
        sensor: String,
        error: WriterError,
    },
    Attach(AttachError),
    Frame(FrameError),
    /// The sensor's writer answered with an error, or is gone.
    Writer(WriterError),
    /// The sensor failed (a write or fsync error) while this connection sent to it.
    SensorFailed {
        sensor: String,
        error: WriterError,
    },
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::TooManyConnections => write!(f, "too many connections"),
            ConnError::PeerCredentials(e) => write!(f, "cannot read peer credentials: {e}"),
            ConnError::PeerNotAllowed { uid, gid } => write!(
                f,
                "peer uid {uid} gid {gid} is not in allow_uids/allow_gids"
            ),
            ConnError::Read(e) => write!(f, "read: {e}"),
            ConnError::Write(e) => write!(f, "write: {e}"),
            ConnError::HelloTooLong { limit } => {
                write!(f, "hello is over max_hello_bytes ({limit})")
            }
            ConnError::HelloCut => write!(f, "connection closed before a complete hello line"),
            ConnError::HelloTimeout(limit) => write!(f, "no hello within {limit:?}"),
            ConnError::Hello(e) => write!(f, "{e}"),
            ConnError::FilesCut { got, expected } => write!(
                f,
                "connection closed after {got} of the {expected} bytes of the hello's files"
            ),
            ConnError::Files { sensor, error } => write!(f, "sensor {sensor:?}: {error}"),
            ConnError::Attach(e) => write!(f, "{e}"),
            ConnError::Frame(e) => write!(f, "{e}"),
            ConnError::Writer(e) => write!(f, "{e}"),
            ConnError::SensorFailed { sensor, error } => {
                write!(f, "sensor {sensor:?} failed: {error}")
            }
        }
    }
}

impl std::error::Error for ConnError {}

impl ConnError {
    /// The sensor whose files failed, when that ended the connection.
    pub fn failed_sensor(&self) -> Option<&str> {
        match self {
            ConnError::SensorFailed { sensor, .. } => Some(sensor),
            _ => None,
        }
    }
}

impl From<HelloError> for ConnError {
    fn from(e: HelloError) -> Self {
        ConnError::Hello(e)
    }
}

impl From<AttachError> for ConnError {
    fn from(e: AttachError) -> Self {
        ConnError::Attach(e)
    }
}

impl From<FrameError> for ConnError {
    fn from(e: FrameError) -> Self {
        ConnError::Frame(e)
    }
}

impl From<WriterError> for ConnError {
    fn from(e: WriterError) -> Self {
        ConnError::Writer(e)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::failure::SensorFailure;

    /// The error line a driver reads, word for word (drivers match on some of these).
    #[test]
    fn error_lines_keep_their_words() {
        let disk = Arc::new(roverlog_core::Error::io(
            "/t/imu/acc",
            std::io::Error::other("no space"),
        ));
        let fsync = Arc::new(SensorFailure::Io {
            what: "fsync",
            source: disk.clone(),
        });
        let failed = |error| ConnError::SensorFailed {
            sensor: "imu".into(),
            error,
        };
        let cases: Vec<(ConnError, &str)> = vec![
            (ConnError::TooManyConnections, "too many connections"),
            (
                ConnError::PeerNotAllowed { uid: 5, gid: 6 },
                "peer uid 5 gid 6 is not in allow_uids/allow_gids",
            ),
            (
                ConnError::HelloTooLong { limit: 64 },
                "hello is over max_hello_bytes (64)",
            ),
            (
                ConnError::HelloCut,
                "connection closed before a complete hello line",
            ),
            (
                ConnError::HelloTimeout(Duration::from_millis(1500)),
                "no hello within 1.5s",
            ),
            (
                AttachError::Busy {
                    sensor: "imu".into(),
                }
                .into(),
                "sensor \"imu\" already has a live connection",
            ),
            (
                AttachError::ChannelsDiffer {
                    sensor: "imu".into(),
                    difference: "2 channels, the sensor has 1".into(),
                }
                .into(),
                "sensor \"imu\" exists in this trace with different channels (2 channels, the sensor has 1); use a new sensor name or rotate",
            ),
            (
                AttachError::TooManySensors {
                    max: 2,
                    sensor: "c".into(),
                }
                .into(),
                "max_sensors (2) reached; sensor \"c\" refused",
            ),
            (
                ConnError::FilesCut {
                    got: 10,
                    expected: 300,
                },
                "connection closed after 10 of the 300 bytes of the hello's files",
            ),
            (
                AttachError::FileIsChannel {
                    sensor: "lidar".into(),
                    file: "rng_i".into(),
                }
                .into(),
                "sensor \"lidar\": file \"rng_i\" is the name of one of its channel files",
            ),
            (
                WriterError::ended("imu").into(),
                "sensor \"imu\": writer has ended",
            ),
            (
                WriterError::Failed(fsync.clone()).into(),
                "fsync failed: /t/imu/acc: no space",
            ),
            (
                failed(WriterError::Failed(fsync)),
                "sensor \"imu\" failed: fsync failed: /t/imu/acc: no space",
            ),
            // The fsync a driver asked for names the error alone.
            (
                failed(WriterError::Sync(disk)),
                "sensor \"imu\" failed: /t/imu/acc: no space",
            ),
            (
                failed(WriterError::Failed(Arc::new(SensorFailure::Panic {
                    panic: "boom".into(),
                }))),
                "sensor \"imu\" failed: internal error: the writer panicked: boom",
            ),
            // As when the compressor's error was kept as the panic's text.
            (
                failed(WriterError::Failed(Arc::new(SensorFailure::Compress(
                    crate::compress::CompressError::Panic {
                        seq: 3,
                        panic: "boom".into(),
                    },
                )))),
                "sensor \"imu\" failed: internal error: the writer panicked: the compression of frame 3 panicked: boom",
            ),
            (
                failed(WriterError::ended("imu")),
                "sensor \"imu\" failed: sensor \"imu\": writer has ended",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want, "{e:?}");
        }
    }
}
