//! Config section: the bounds on what a connection may send and hold (queues and limits).
//! Every queue and buffer between a driver and its writer is bounded by one of these.

use std::time::Duration;

use super::raw::{QueuePolicy, RawConfig};
use crate::error::{ConfigProblem, Result};

/// Keys `queue_bytes` to `hello_timeout_ms` (config/README.md, "Queues and limits").
#[derive(Debug, Clone, PartialEq)]
pub struct Ingest {
    /// Per-sensor queue budget between the connection and the writer, in frame bytes.
    pub queue_bytes: u64,
    pub queue_policy: QueuePolicy,
    /// Largest frame `len` accepted; fits in `queue_bytes`.
    pub max_frame_bytes: u32,
    pub max_sensors: usize,
    /// Data channels per sensor (`ts` not counted).
    pub max_channels: usize,
    pub max_hello_bytes: usize,
    /// A connection that has not sent its whole hello line by then is refused.
    pub hello_timeout: Duration,
}

impl Ingest {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Ingest> {
        if raw.queue_bytes < 1024 {
            return Err(ConfigProblem::QueueBytesTooSmall {
                queue_bytes: raw.queue_bytes,
            }
            .into());
        }
        if raw.max_frame_bytes < 8 {
            return Err(ConfigProblem::FrameBytesTooSmall {
                max_frame_bytes: raw.max_frame_bytes,
            }
            .into());
        }
        if raw.max_frame_bytes > 1 << 30 {
            return Err(ConfigProblem::FrameBytesTooLarge {
                max_frame_bytes: raw.max_frame_bytes,
            }
            .into());
        }
        if u64::from(raw.max_frame_bytes) + 4 > raw.queue_bytes {
            return Err(ConfigProblem::FrameOverQueue {
                max_frame_bytes: raw.max_frame_bytes,
                queue_bytes: raw.queue_bytes,
            }
            .into());
        }
        // The budget is a semaphore of that many permits.
        if raw.queue_bytes > (usize::MAX >> 4) as u64 {
            return Err(ConfigProblem::QueueBytesTooLarge {
                queue_bytes: raw.queue_bytes,
            }
            .into());
        }
        for (k, v) in [
            ("max_sensors", raw.max_sensors),
            ("max_channels", raw.max_channels),
            ("max_hello_bytes", raw.max_hello_bytes),
        ] {
            if v == 0 {
                return Err(ConfigProblem::NotPositive { keys: vec![k] }.into());
            }
        }
        // meta.json holds `ts` besides the data channels.
        let most = roverlog_core::format::meta::MAX_CHANNELS - 1;
        if raw.max_channels > most {
            return Err(ConfigProblem::MaxChannels {
                max_channels: raw.max_channels,
                most,
            }
            .into());
        }
        if raw.hello_timeout_ms == 0 {
            return Err(ConfigProblem::NotPositive {
                keys: vec!["hello_timeout_ms"],
            }
            .into());
        }
        Ok(Ingest {
            queue_bytes: raw.queue_bytes,
            queue_policy: raw.queue_policy,
            max_frame_bytes: raw.max_frame_bytes,
            max_sensors: raw.max_sensors,
            max_channels: raw.max_channels,
            max_hello_bytes: raw.max_hello_bytes,
            hello_timeout: Duration::from_millis(raw.hello_timeout_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(raw: RawConfig) -> String {
        Ingest::from_raw(&raw).unwrap_err().to_string()
    }

    #[test]
    fn queue_and_frame_bounds() {
        let i = Ingest::from_raw(&RawConfig {
            queue_bytes: 4096,
            max_frame_bytes: 4092,
            queue_policy: QueuePolicy::Drop,
            hello_timeout_ms: 250,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!((i.queue_bytes, i.max_frame_bytes), (4096, 4092));
        assert_eq!(i.queue_policy, QueuePolicy::Drop);
        assert_eq!(i.hello_timeout, Duration::from_millis(250));
        assert_eq!(
            message(RawConfig {
                queue_bytes: 4096,
                max_frame_bytes: 4093,
                ..RawConfig::default()
            }),
            "config: max_frame_bytes (4093) must fit in queue_bytes (4096) or a frame could never be queued"
        );
        assert_eq!(
            message(RawConfig {
                queue_bytes: 1023,
                ..RawConfig::default()
            }),
            "config: queue_bytes must be at least 1024"
        );
        assert_eq!(
            message(RawConfig {
                max_hello_bytes: 0,
                ..RawConfig::default()
            }),
            "config: max_hello_bytes must be positive"
        );
    }

    #[test]
    fn max_channels_cannot_exceed_what_meta_json_may_hold() {
        let most = roverlog_core::format::meta::MAX_CHANNELS - 1;
        let raw = |n| RawConfig {
            max_channels: n,
            ..RawConfig::default()
        };
        assert_eq!(Ingest::from_raw(&raw(most)).unwrap().max_channels, most);
        assert_eq!(
            message(raw(most + 1)),
            "config: max_channels (1024) is over 1023, the most data channels a sensor's meta.json may hold"
        );
    }
}
