//! Why a config document cannot be used ([`super::Error::Config`]), as values: the keys,
//! sensors and values involved. Each section of the config module (`sockets`, `ingest`, ...)
//! raises the problems of its keys; each variant's `Display` is the message users read after
//! `config: ` (config/README.md documents the keys). It sits beside the error type, so that
//! `error` imports nothing of `config` back.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use roverlog_export::location::LocationError;
use roverlog_offload::rate::BytesError;

/// A value the document holds that the daemon cannot use.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigProblem {
    // ----- any section ----------------------------------------------------------------------
    /// Keys that must be positive and one is not (named together when one check covers them:
    /// "a, b and c must be positive").
    NotPositive { keys: Vec<&'static str> },
    /// A key that must be a positive number and is not.
    NotPositiveNumber { key: &'static str },

    // ----- sockets --------------------------------------------------------------------------
    /// `ingest_socket` and `control_socket` naming one path.
    SameSocket { path: PathBuf },
    /// Monitors of the control socket without any operator.
    MonitorsWithoutOperators,
    /// A `socket_mode` that is not octal.
    SocketModeNotOctal { text: String },
    /// A `socket_mode` over `0777`.
    SocketModeTooLarge { text: String },

    // ----- ingest ---------------------------------------------------------------------------
    /// A `queue_bytes` under 1024.
    QueueBytesTooSmall { queue_bytes: u64 },
    /// A `queue_bytes` too large for the budget's semaphore.
    QueueBytesTooLarge { queue_bytes: u64 },
    /// A `max_frame_bytes` under 8 (a timestamp).
    FrameBytesTooSmall { max_frame_bytes: u32 },
    /// A `max_frame_bytes` over 1 GiB.
    FrameBytesTooLarge { max_frame_bytes: u32 },
    /// A `max_frame_bytes` that does not fit in `queue_bytes`.
    FrameOverQueue {
        max_frame_bytes: u32,
        queue_bytes: u64,
    },
    /// A `max_channels` over `most`, what a sensor's `meta.json` may hold besides `ts`.
    MaxChannels { max_channels: usize, most: usize },

    // ----- durability -----------------------------------------------------------------------
    /// A `blob_sync_threads` over `limit`.
    BlobSyncThreads { threads: usize, limit: usize },
    /// A `blob_max_open_files` outside `1..=limit`.
    BlobOpenFiles { files: usize, limit: usize },
    /// `fsync` `"periodic"` with `fsync_interval_ms` 0.
    FsyncInterval,
    /// An `fsync` other than `"periodic"` or `"on_request"`.
    Fsync { fsync: String },

    // ----- storage --------------------------------------------------------------------------
    /// An `lzmaf_preset` over 9.
    LzmafPreset { preset: u32 },
    /// An `lzmaf_store_above` outside (0, 1].
    LzmafStoreAbove { fraction: f64 },
    /// A format override other than `raw`, `lzmaf` or `mjpg` (`format`: as written).
    FormatOverride {
        sensor: String,
        channel: String,
        format: String,
    },

    // ----- recording ------------------------------------------------------------------------
    /// A `drain_quiet_ms` of 0, or not under `shutdown_deadline_ms`.
    DrainQuiet {
        drain_quiet_ms: u64,
        shutdown_deadline_ms: u64,
    },
    /// A `pre_trigger_seconds` not over 0 or over a day.
    PreTrigger { seconds: f64 },

    // ----- health ---------------------------------------------------------------------------
    /// A sensor's `expected_hz` that is not a positive number.
    ExpectedHz { sensor: String },
    /// A sensor's `tolerance` that is not a number >= 0.
    Tolerance { sensor: String },
    /// A `queue_high_fraction` outside (0, 1].
    QueueHighFraction { fraction: f64 },

    // ----- viewers --------------------------------------------------------------------------
    /// An `http_token` shorter than `min` characters, or with spaces or control characters.
    HttpToken { min: usize },
    /// An `http_allowed_hosts` entry that is not a host with an optional port.
    AllowedHost { entry: String },
    /// An `http_listen` that is not an IP address with a port.
    HttpListen { listen: String },
    /// An `http_listen` beyond loopback without an `http_token` (of at least `min`
    /// characters).
    HttpNotLoopback { addr: SocketAddr, min: usize },
    /// A message rate (`foxglove_max_hz`, or `sensor`'s in `foxglove_sensor_hz`) that is not
    /// a positive number.
    MessageRate { sensor: Option<String>, hz: f64 },
    /// A `foxglove_listen` that is not an IP address with a port.
    FoxgloveListen { listen: String },
    /// A `foxglove_listen` beyond loopback.
    FoxgloveNotLoopback { addr: SocketAddr },
    /// A `foxglove_location` mapping that does not parse.
    FoxgloveLocation(LocationError),

    // ----- offload --------------------------------------------------------------------------
    /// An offload without `dest`.
    OffloadNoDest,
    /// An offload `when` other than `"idle"` or `"always"`.
    OffloadWhen { when: String },
    /// An offload `rate` that is not a rate.
    OffloadRate(BytesError),
    /// An offload `interval_ms` of 0.
    OffloadInterval,
    /// An offload `keep_free` that is not a percentage.
    KeepFreeNotPercent { text: String },
    /// An offload `keep_free` outside [0%, 100%).
    KeepFreeRange { text: String },
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConfigProblem as P;
        match self {
            P::NotPositive { keys } => {
                for (i, key) in keys.iter().enumerate() {
                    if i > 0 {
                        f.write_str(if i + 1 == keys.len() { " and " } else { ", " })?;
                    }
                    f.write_str(key)?;
                }
                f.write_str(" must be positive")
            }
            P::NotPositiveNumber { key } => write!(f, "{key} must be a positive number"),
            P::SameSocket { path } => write!(
                f,
                "ingest_socket and control_socket are the same path ({})",
                path.display()
            ),
            P::MonitorsWithoutOperators => f.write_str(
                "control_monitor_uids/gids need control_operator_uids/gids too (else nobody could stop the daemon)",
            ),
            P::SocketModeNotOctal { text } => write!(f, "socket_mode {text:?} is not octal"),
            P::SocketModeTooLarge { text } => write!(f, "socket_mode {text:?} is over 0777"),
            P::QueueBytesTooSmall { .. } => f.write_str("queue_bytes must be at least 1024"),
            P::QueueBytesTooLarge { .. } => f.write_str("queue_bytes is too large"),
            P::FrameBytesTooSmall { .. } => {
                f.write_str("max_frame_bytes must be at least 8 (a timestamp)")
            }
            P::FrameBytesTooLarge { .. } => f.write_str("max_frame_bytes must be at most 1 GiB"),
            P::FrameOverQueue {
                max_frame_bytes,
                queue_bytes,
            } => write!(
                f,
                "max_frame_bytes ({max_frame_bytes}) must fit in queue_bytes ({queue_bytes}) or a frame could never be queued"
            ),
            P::MaxChannels { max_channels, most } => write!(
                f,
                "max_channels ({max_channels}) is over {most}, the most data channels a sensor's meta.json may hold"
            ),
            P::BlobSyncThreads { threads, limit } => {
                write!(f, "blob_sync_threads ({threads}) is over {limit}")
            }
            P::BlobOpenFiles { files, limit } => write!(
                f,
                "blob_max_open_files ({files}) must be from 1 to {limit}"
            ),
            P::FsyncInterval => {
                f.write_str("fsync_interval_ms must be positive with fsync \"periodic\"")
            }
            P::Fsync { fsync } => write!(
                f,
                "fsync {fsync:?} (expected \"periodic\" or \"on_request\")"
            ),
            P::LzmafPreset { .. } => f.write_str("lzmaf_preset must be 0..=9"),
            P::LzmafStoreAbove { fraction } => write!(
                f,
                "lzmaf_store_above must be a fraction of the queue in (0, 1], not {fraction}"
            ),
            P::FormatOverride {
                sensor,
                channel,
                format,
            } => write!(
                f,
                "formats.{sensor}.{channel}: {format:?} (overrides may only be \"raw\", \"lzmaf\" or \"mjpg\")"
            ),
            P::DrainQuiet {
                drain_quiet_ms,
                shutdown_deadline_ms,
            } => write!(
                f,
                "drain_quiet_ms ({drain_quiet_ms}) must be positive and under shutdown_deadline_ms ({shutdown_deadline_ms})"
            ),
            P::PreTrigger { seconds } => write!(
                f,
                "pre_trigger_seconds ({seconds}) must be over 0 and at most a day"
            ),
            P::ExpectedHz { sensor } => {
                write!(f, "sensors.{sensor}.expected_hz must be a positive number")
            }
            P::Tolerance { sensor } => {
                write!(f, "sensors.{sensor}.tolerance must be a number >= 0")
            }
            P::QueueHighFraction { .. } => f.write_str("queue_high_fraction must be in (0, 1]"),
            P::HttpToken { min } => write!(
                f,
                "http_token must be at least {min} characters, without spaces or control characters"
            ),
            P::AllowedHost { entry } => write!(
                f,
                "http_allowed_hosts entry {entry:?} is not a host name or IP address with an optional port (\"rover.local\", \"rover.local:9000\", \"10.8.0.2:8080\", \"[fd00::2]:8080\")"
            ),
            P::HttpListen { listen } => write!(
                f,
                "http_listen {listen:?} is not an IP address with a port (\"127.0.0.1:8080\", \"[::1]:8080\")"
            ),
            P::HttpNotLoopback { addr, min } => write!(
                f,
                "http_listen {addr} is not a loopback address: set http_token (a secret of at least {min} characters) so nobody else on the network can control the daemon"
            ),
            P::MessageRate { sensor, hz } => {
                match sensor {
                    None => f.write_str("foxglove_max_hz")?,
                    Some(s) => write!(f, "foxglove_sensor_hz.{s}")?,
                }
                write!(
                    f,
                    " must be a positive number of messages per second, not {hz}"
                )
            }
            P::FoxgloveListen { listen } => write!(
                f,
                "foxglove_listen {listen:?} is not an IP address with a port (\"127.0.0.1:8765\")"
            ),
            P::FoxgloveNotLoopback { addr } => write!(
                f,
                "foxglove_listen {addr} is not a loopback address: the live feed has no authentication, so it serves this machine only (reach it from elsewhere through an SSH tunnel)"
            ),
            P::FoxgloveLocation(e) => write!(f, "foxglove_location.{e}"),
            P::OffloadNoDest => {
                f.write_str("offload: dest is missing (s3://bucket/prefix or a directory)")
            }
            P::OffloadWhen { when } => write!(
                f,
                "offload: when {when:?} (expected \"idle\" or \"always\")"
            ),
            P::OffloadRate(e) => write!(f, "offload: rate {e}"),
            P::OffloadInterval => f.write_str("offload: interval_ms must be more than 0"),
            P::KeepFreeNotPercent { text } => write!(
                f,
                "offload: keep_free {text:?}: not a percentage (e.g. \"20%\")"
            ),
            P::KeepFreeRange { text } => write!(
                f,
                "offload: keep_free {text:?}: must be from 0% to under 100%"
            ),
        }
    }
}
