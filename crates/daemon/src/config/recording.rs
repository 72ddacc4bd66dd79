//! Config sections of the recording's life: where traces go and when they start
//! ([`Recording`], with the disk guard and the shutdown bounds), when they are split
//! ([`Rotation`]) and the pre-trigger ring kept while none is open ([`Snapshot`]).

use std::path::PathBuf;
use std::time::Duration;

use super::raw::RawConfig;
use crate::error::{ConfigProblem, Result};
use roverlog_core::error::Error;

/// Keys `data_root`, `autostart`, `resume_unfinished`, `label`, the disk guard
/// (`min_free_bytes`, `disk_check_interval_ms`), `stats_interval_ms`, `drain_quiet_ms` and
/// `shutdown_deadline_ms` (config/README.md, "Recording", "Disk guard", "Operations").
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub data_root: PathBuf,
    /// Start a trace at startup.
    pub autostart: bool,
    /// At start, continue the newest trace when the daemon died while recording it.
    pub resume_unfinished: bool,
    /// Default label of new traces (checked by [`validate_label`]).
    pub label: Option<String>,
    /// Below this many free bytes on `data_root`'s filesystem, recording stops.
    pub min_free_bytes: u64,
    /// A recording the disk stopped starts again by itself once this many bytes are free
    /// (`resume_free_bytes`, at least `min_free_bytes`) and `data_root` takes a write.
    pub resume_free_bytes: u64,
    pub disk_check_interval: Duration,
    /// One `stats` log line per sensor this often.
    pub stats_interval: Duration,
    /// While shutting down, a connection stops draining after this long without new bytes
    /// (under `shutdown_deadline`).
    pub drain_quiet: Duration,
    /// Draining connections, queues and fsyncs must finish within this at shutdown.
    pub shutdown_deadline: Duration,
}

impl Recording {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Recording> {
        if let Some(label) = &raw.label {
            validate_label(label)?;
        }
        if raw.drain_quiet_ms == 0 || raw.drain_quiet_ms >= raw.shutdown_deadline_ms {
            return Err(ConfigProblem::DrainQuiet {
                drain_quiet_ms: raw.drain_quiet_ms,
                shutdown_deadline_ms: raw.shutdown_deadline_ms,
            }
            .into());
        }
        if raw.stats_interval_ms == 0 {
            return Err(ConfigProblem::NotPositive {
                keys: vec!["flush_interval_ms", "stats_interval_ms"],
            }
            .into());
        }
        if raw.disk_check_interval_ms == 0 {
            return Err(ConfigProblem::NotPositive {
                keys: vec!["disk_check_interval_ms"],
            }
            .into());
        }
        Ok(Recording {
            data_root: raw.data_root.clone(),
            autostart: raw.autostart,
            resume_unfinished: raw.resume_unfinished,
            label: raw.label.clone(),
            min_free_bytes: raw.min_free_bytes,
            resume_free_bytes: raw.resume_free_bytes.max(raw.min_free_bytes),
            disk_check_interval: Duration::from_millis(raw.disk_check_interval_ms),
            stats_interval: Duration::from_millis(raw.stats_interval_ms),
            drain_quiet: Duration::from_millis(raw.drain_quiet_ms),
            shutdown_deadline: Duration::from_millis(raw.shutdown_deadline_ms),
        })
    }
}

/// Keys `rotate_bytes` and `rotate_seconds` (0 in the file: never).
#[derive(Debug, Clone, PartialEq)]
pub struct Rotation {
    /// A new trace once the sensors appended this many sample bytes to the current one.
    pub bytes: Option<u64>,
    /// A new trace once the current one is this old.
    pub age: Option<Duration>,
}

impl Rotation {
    pub(super) fn from_raw(raw: &RawConfig) -> Rotation {
        Rotation {
            bytes: (raw.rotate_bytes > 0).then_some(raw.rotate_bytes),
            age: (raw.rotate_seconds > 0).then(|| Duration::from_secs(raw.rotate_seconds)),
        }
    }

    /// Whether traces are ever rotated by size or age.
    pub fn is_on(&self) -> bool {
        self.bytes.is_some() || self.age.is_some()
    }
}

/// Keys `snapshot`, `pre_trigger_seconds`, `snapshot_bytes` (config/README.md, "Operations").
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Keep the last `pre_trigger` in memory while not recording (switchable at run time).
    pub enabled: bool,
    /// How far back the ring reaches: over 0, at most a day.
    pub pre_trigger: Duration,
    /// The ring's bound, all sensors together.
    pub bytes: u64,
}

impl Snapshot {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Snapshot> {
        let secs = raw.pre_trigger_seconds;
        if !(secs > 0.0 && secs <= 86_400.0) {
            return Err(ConfigProblem::PreTrigger { seconds: secs }.into());
        }
        Ok(Snapshot {
            enabled: raw.snapshot,
            pre_trigger: Duration::from_secs_f64(secs),
            bytes: raw.snapshot_bytes,
        })
    }
}

/// A trace label: becomes part of a directory name under `data_root`, so only
/// `[A-Za-z0-9._-]`, at most 64 bytes, not starting with `.` or `-` (no traversal, no
/// hidden directories, no option-looking names).
pub fn validate_label(label: &str) -> roverlog_core::Result<()> {
    let ok = !label.is_empty()
        && label.len() <= 64
        && !label.starts_with(['.', '-'])
        && !label.contains("..")
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidName {
            kind: "label",
            name: label.to_string(),
            reason: "labels are 1-64 of [A-Za-z0-9._-], not starting with '.' or '-', no '..'",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_quiet_must_be_positive_and_under_the_shutdown_deadline() {
        let raw = |q| RawConfig {
            drain_quiet_ms: q,
            shutdown_deadline_ms: 1000,
            ..RawConfig::default()
        };
        let r = Recording::from_raw(&raw(999)).unwrap();
        assert_eq!(r.drain_quiet, Duration::from_millis(999));
        assert_eq!(r.shutdown_deadline, Duration::from_secs(1));
        for q in [0, 1000, 5000] {
            let e = Recording::from_raw(&raw(q)).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("config: drain_quiet_ms ({q}) must be positive and under shutdown_deadline_ms (1000)")
            );
        }
    }

    #[test]
    fn the_label_and_intervals_are_checked() {
        let r = Recording::from_raw(&RawConfig {
            label: Some("drive-3".into()),
            disk_check_interval_ms: 250,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!(r.label.as_deref(), Some("drive-3"));
        assert_eq!(r.disk_check_interval, Duration::from_millis(250));
        let e = Recording::from_raw(&RawConfig {
            label: Some("../up".into()),
            ..RawConfig::default()
        })
        .unwrap_err();
        assert!(
            matches!(
                e,
                crate::Error::Core(Error::InvalidName { kind: "label", .. })
            ),
            "{e}"
        );
        let e = Recording::from_raw(&RawConfig {
            stats_interval_ms: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: flush_interval_ms and stats_interval_ms must be positive"
        );
        let e = Recording::from_raw(&RawConfig {
            disk_check_interval_ms: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: disk_check_interval_ms must be positive"
        );
    }

    #[test]
    fn rotation_zero_means_never() {
        let never = Rotation::from_raw(&RawConfig::default());
        assert_eq!((never.bytes, never.age, never.is_on()), (None, None, false));
        let both = Rotation::from_raw(&RawConfig {
            rotate_bytes: 1 << 30,
            rotate_seconds: 600,
            ..RawConfig::default()
        });
        assert_eq!(both.bytes, Some(1 << 30));
        assert_eq!(both.age, Some(Duration::from_secs(600)));
        assert!(both.is_on());
    }

    #[test]
    fn the_pre_trigger_window_is_over_0_and_at_most_a_day() {
        let s = Snapshot::from_raw(&RawConfig {
            snapshot: true,
            pre_trigger_seconds: 2.5,
            ..RawConfig::default()
        })
        .unwrap();
        assert!(s.enabled);
        assert_eq!(s.pre_trigger, Duration::from_millis(2500));
        for secs in [0.0, -1.0, 86_401.0, f64::NAN] {
            let e = Snapshot::from_raw(&RawConfig {
                pre_trigger_seconds: secs,
                ..RawConfig::default()
            })
            .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("config: pre_trigger_seconds ({secs}) must be over 0 and at most a day")
            );
        }
    }

    #[test]
    fn labels_cannot_escape() {
        for bad in ["../x", "a/b", "..", ".hidden", "-rf", "", "a b", "x\0"] {
            assert!(validate_label(bad).is_err(), "{bad:?}");
        }
        validate_label("drive-3_north.v2").unwrap();
    }
}
