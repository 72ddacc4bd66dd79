//! Config section: when written bytes reach the kernel and the disk. The policy is a typed
//! enum whose variants say what survives a power cut, so the writer matches on a promise,
//! not on a string.

use std::time::Duration;

use super::raw::RawConfig;
use crate::error::{ConfigProblem, Result};

/// Most fsyncs of a blob channel in flight at once (`blob_sync_threads`).
pub const MAX_BLOB_SYNC_THREADS: usize = 1024;

/// Most files of a blob channel kept open between fsyncs (`blob_max_open_files`): well under
/// the usual open-file limit of 1,024 for one channel.
pub const MAX_BLOB_OPEN_FILES: usize = 512;

/// When sensor files are fsynced. Whatever the policy, a driver's `len = 0` request and a
/// clean stop always fsync, and buffers reach the kernel every `flush_interval_ms` (so a
/// crash of the daemon process alone loses at most what was still queued or buffered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// fsync every `interval` and whenever `bytes` were written since the last one.
    /// Guarantee: a power cut loses at most the samples of the last interval (or the last
    /// `bytes`), plus what was queued.
    Periodic { interval: Duration, bytes: u64 },
    /// fsync only when a driver asks (`len = 0`), at rotation and at stop.
    /// Guarantee: only samples at or below the acknowledged durable watermark survive a power
    /// cut; the kernel decides about the rest.
    OnRequest,
}

/// Keys `flush_interval_ms`, `fsync*`, `writeback_bytes`, `blob_sync_threads`,
/// `blob_max_open_files` (config/README.md, "Durability").
#[derive(Debug, Clone, PartialEq)]
pub struct Durability {
    /// Buffered bytes reach the kernel at least this often.
    pub flush_interval: Duration,
    pub fsync: FsyncPolicy,
    /// Start the kernel's writeback of a channel file every this many bytes (see
    /// `format::append`); 0: leave it to the kernel's own thresholds.
    pub writeback_bytes: u64,
    /// fsyncs of a blob channel's files (`jpg`, `npz`) in flight at once at each sync; 1: one
    /// after the other.
    pub blob_sync_threads: usize,
    /// Files of a blob channel kept open between fsyncs; at the bound they are fsynced and
    /// closed early (the durable count still moves only at the periodic sync).
    pub blob_max_open_files: usize,
}

impl Durability {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Durability> {
        if raw.flush_interval_ms == 0 {
            return Err(ConfigProblem::NotPositive {
                keys: vec!["flush_interval_ms", "stats_interval_ms"],
            }
            .into());
        }
        if raw.blob_sync_threads == 0 {
            return Err(ConfigProblem::NotPositive {
                keys: vec!["blob_sync_threads"],
            }
            .into());
        }
        if raw.blob_sync_threads > MAX_BLOB_SYNC_THREADS {
            return Err(ConfigProblem::BlobSyncThreads {
                threads: raw.blob_sync_threads,
                limit: MAX_BLOB_SYNC_THREADS,
            }
            .into());
        }
        if !(1..=MAX_BLOB_OPEN_FILES).contains(&raw.blob_max_open_files) {
            return Err(ConfigProblem::BlobOpenFiles {
                files: raw.blob_max_open_files,
                limit: MAX_BLOB_OPEN_FILES,
            }
            .into());
        }
        Ok(Durability {
            flush_interval: Duration::from_millis(raw.flush_interval_ms),
            fsync: fsync_policy(raw)?,
            writeback_bytes: raw.writeback_bytes,
            blob_sync_threads: raw.blob_sync_threads,
            blob_max_open_files: raw.blob_max_open_files,
        })
    }
}

/// `fsync` with `fsync_interval_ms` and `fsync_bytes` (0: no byte trigger).
fn fsync_policy(raw: &RawConfig) -> std::result::Result<FsyncPolicy, ConfigProblem> {
    match raw.fsync.as_str() {
        "periodic" => {
            if raw.fsync_interval_ms == 0 {
                return Err(ConfigProblem::FsyncInterval);
            }
            Ok(FsyncPolicy::Periodic {
                interval: Duration::from_millis(raw.fsync_interval_ms),
                bytes: if raw.fsync_bytes == 0 {
                    u64::MAX
                } else {
                    raw.fsync_bytes
                },
            })
        }
        "on_request" => Ok(FsyncPolicy::OnRequest),
        other => Err(ConfigProblem::Fsync {
            fsync: other.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(raw: RawConfig) -> Result<Durability> {
        Durability::from_raw(&raw)
    }

    #[test]
    fn fsync_becomes_a_policy() {
        let d = convert(RawConfig::default()).unwrap();
        assert_eq!(
            d.fsync,
            FsyncPolicy::Periodic {
                interval: Duration::from_secs(1),
                bytes: 64 << 20
            }
        );
        let no_byte_trigger = convert(RawConfig {
            fsync_bytes: 0,
            ..RawConfig::default()
        })
        .unwrap();
        assert!(matches!(
            no_byte_trigger.fsync,
            FsyncPolicy::Periodic {
                bytes: u64::MAX,
                ..
            }
        ));
        // The interval only matters to "periodic".
        let on_request = convert(RawConfig {
            fsync: "on_request".into(),
            fsync_interval_ms: 0,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!(on_request.fsync, FsyncPolicy::OnRequest);
        let e = convert(RawConfig {
            fsync: "always".into(),
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"config: fsync "always" (expected "periodic" or "on_request")"#
        );
        let e = convert(RawConfig {
            fsync_interval_ms: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"config: fsync_interval_ms must be positive with fsync "periodic""#
        );
    }

    #[test]
    fn flush_interval_must_be_positive() {
        let d = convert(RawConfig {
            flush_interval_ms: 20,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!(d.flush_interval, Duration::from_millis(20));
        let e = convert(RawConfig {
            flush_interval_ms: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: flush_interval_ms and stats_interval_ms must be positive"
        );
    }

    #[test]
    fn blob_sync_threads_must_be_from_1_to_the_cap() {
        let raw = |n| RawConfig {
            blob_sync_threads: n,
            ..RawConfig::default()
        };
        assert_eq!(convert(raw(1)).unwrap().blob_sync_threads, 1);
        convert(raw(MAX_BLOB_SYNC_THREADS)).unwrap();
        let e = convert(raw(0)).unwrap_err().to_string();
        assert_eq!(e, "config: blob_sync_threads must be positive");
        let e = convert(raw(MAX_BLOB_SYNC_THREADS + 1))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "config: blob_sync_threads (1025) is over 1024");
    }

    #[test]
    fn blob_max_open_files_must_be_from_1_to_the_cap() {
        let raw = |n| RawConfig {
            blob_max_open_files: n,
            ..RawConfig::default()
        };
        assert_eq!(convert(raw(1)).unwrap().blob_max_open_files, 1);
        assert_eq!(
            convert(RawConfig::default()).unwrap().blob_max_open_files,
            64
        );
        for bad in [0, MAX_BLOB_OPEN_FILES + 1] {
            let e = convert(raw(bad)).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("config: blob_max_open_files ({bad}) must be from 1 to 512")
            );
        }
    }
}
