//! The daemon's configuration: one JSON document, every key optional, defaults that make
//! `roverlog daemon` with no arguments a working logger (data under `./data`, sockets under
//! `./run`). `config/README.md` documents every key; keep the two in step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The channel the daemon records its receive time of every sample in (see
/// `receive_timestamps`).
pub const RECEIVE_TS_CHANNEL: &str = "ts_recv";

use roverlog_core::error::{Error, Result};
use roverlog_core::format::{validate_name, ChannelFormat};

/// What a connection does when its sensor's queue has no room for a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueuePolicy {
    /// Stop reading from the driver until the writer made room: nothing is lost inside the
    /// daemon, the driver sees backpressure (its socket buffer fills, its writes block).
    Block,
    /// Drop the newest frame and count it: the driver never waits; every drop is counted
    /// exactly and written with its time span to `events.jsonl`.
    Drop,
}

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

/// Most fsyncs of a blob channel in flight at once (`blob_sync_threads`).
pub const MAX_BLOB_SYNC_THREADS: usize = 1024;

/// The daemon's configuration (see `config/README.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Documentation strings in the example file; ignored.
    #[serde(rename = "_doc", skip_serializing_if = "Option::is_none")]
    pub doc: Option<serde_json::Value>,
    pub data_root: PathBuf,
    pub ingest_socket: PathBuf,
    pub control_socket: PathBuf,
    /// Octal permission bits of both sockets, as a string (`"0660"`).
    pub socket_mode: String,
    /// Group (name or numeric gid) given to both sockets; `null` keeps the daemon's group.
    pub socket_group: Option<String>,
    /// Peer uids allowed on the ingest socket (empty: anyone who can open it).
    pub allow_uids: Vec<u32>,
    /// Peer gids allowed on the ingest socket (empty: anyone who can open it).
    pub allow_gids: Vec<u32>,
    /// Control socket peers (uids / gids) that may run every command. With both operator
    /// lists empty, everyone who can open the socket is an operator (the socket's mode and
    /// group decide).
    pub control_operator_uids: Vec<u32>,
    pub control_operator_gids: Vec<u32>,
    /// Control socket peers that may only ask for `status` (a monitoring group).
    pub control_monitor_uids: Vec<u32>,
    pub control_monitor_gids: Vec<u32>,
    /// A control connection that sends no complete command for this long is closed.
    pub control_idle_timeout_ms: u64,
    pub autostart: bool,
    /// At start, continue the newest trace when the daemon died while recording it.
    pub resume_unfinished: bool,
    pub label: Option<String>,
    pub queue_bytes: u64,
    pub queue_policy: QueuePolicy,
    pub max_frame_bytes: u32,
    pub max_sensors: usize,
    pub max_channels: usize,
    pub max_hello_bytes: usize,
    /// A connection that has not sent its whole hello line by then is refused.
    pub hello_timeout_ms: u64,
    pub flush_interval_ms: u64,
    /// `"periodic"` or `"on_request"`.
    pub fsync: String,
    pub fsync_interval_ms: u64,
    pub fsync_bytes: u64,
    pub buffer_bytes: usize,
    /// Write large `raw` channels with `O_DIRECT` (see `format::direct`).
    pub direct_io: bool,
    /// With `direct_io`: `raw` channels whose samples have at least this many bytes.
    pub direct_io_min_sample_bytes: usize,
    /// Start the kernel's writeback of a channel file every this many bytes (see
    /// `format::append`); 0: leave it to the kernel's own thresholds.
    pub writeback_bytes: u64,
    /// fsyncs of a blob channel's files (`jpg`, `npz`) in flight at once at each sync; 1: one
    /// after the other.
    pub blob_sync_threads: usize,
    pub lzmaf_preset: u32,
    /// Threads compressing one sensor's `lzmaf` samples; 0: one per CPU (at most 8).
    pub compress_threads: usize,
    /// `{"sensor": {"channel": "lzmaf"}}`: store a channel in another format than declared.
    pub formats: BTreeMap<String, BTreeMap<String, String>>,
    pub rotate_bytes: u64,
    pub rotate_seconds: u64,
    pub min_free_bytes: u64,
    pub disk_check_interval_ms: u64,
    pub stats_interval_ms: u64,
    pub shutdown_deadline_ms: u64,
    /// Keep the last `pre_trigger_seconds` in memory while not recording (see `snapshot`).
    pub snapshot: bool,
    pub pre_trigger_seconds: f64,
    /// The snapshot ring's bound, all sensors together.
    pub snapshot_bytes: u64,
    /// While shutting down, a connection stops draining after this long without new bytes.
    pub drain_quiet_ms: u64,
    /// Test-only: the writer sleeps this long before each sample (makes queues fill up).
    pub debug_write_delay_ms: u64,
    /// Test-only: start-up recovery takes this much longer (shows EXTEND_TIMEOUT_USEC).
    pub debug_recovery_delay_ms: u64,
    /// Per sensor: its expected rate and whether it must be there (health alarms).
    pub sensors: BTreeMap<String, SensorHealth>,
    /// `silent` after this many expected periods without a sample.
    pub silent_periods: f64,
    /// `missing` when a required sensor has not connected this long after a trace started.
    pub missing_after_ms: u64,
    /// A sensor without `expected_hz` that sent steadily this long gets its rate as expected.
    pub learn_rate_ms: u64,
    /// The window over which rates are measured for `rate_low`/`rate_high`.
    pub rate_window_ms: u64,
    /// `queue_high` when a sensor's queue holds more than this fraction of its budget.
    pub queue_high_fraction: f64,
    /// `disk_low` when the free space lasts less than this at the current write rate.
    pub disk_low_seconds: u64,
    /// Run on every alarm raised and cleared, with the alarm as JSON on stdin (`[]`: none).
    pub alarm_command: Vec<String>,
    /// An alarm command still running after this long is killed.
    pub alarm_command_timeout_ms: u64,
    /// How often the health alarms are evaluated.
    pub health_interval_ms: u64,
    /// Record the daemon's receive time of every sample in a `ts_recv` channel.
    pub receive_timestamps: bool,
    /// Sensors without a `ts_recv` channel even so.
    pub receive_timestamps_except: Vec<String>,
    /// A `clock_step` event when a sensor's median clock offset moves by more than this.
    pub clock_step_threshold_s: f64,
    /// The dashboard's address (`"127.0.0.1:8080"`); `null`: no dashboard (see `http`).
    pub http_listen: Option<String>,
    /// The dashboard's secret: required for every command sent through it, and for any
    /// listen address that is not loopback. `null`: a read-only dashboard on loopback.
    pub http_token: Option<String>,
    /// The live Foxglove feed's WebSocket address (loopback only); `null`: no feed.
    pub foxglove_listen: Option<String>,
    /// Messages per second per channel on the live feed, at most.
    pub foxglove_max_hz: f64,
    /// Per sensor: its own `foxglove_max_hz`.
    pub foxglove_sensor_hz: BTreeMap<String, f64>,
}

/// What the health alarms expect of one sensor (config `sensors`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SensorHealth {
    /// Samples per second; `null`: learned (see `learn_rate_ms`).
    pub expected_hz: Option<f64>,
    /// Allowed relative deviation of the measured rate (0.2: within 20 %).
    pub tolerance: f64,
    /// `missing` is raised when it does not connect.
    pub required: bool,
}

impl Default for SensorHealth {
    fn default() -> Self {
        SensorHealth {
            expected_hz: None,
            tolerance: 0.2,
            required: false,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            doc: None,
            data_root: "./data".into(),
            ingest_socket: "./run/ingest.sock".into(),
            control_socket: "./run/control.sock".into(),
            socket_mode: "0660".into(),
            socket_group: None,
            allow_uids: Vec::new(),
            allow_gids: Vec::new(),
            control_operator_uids: Vec::new(),
            control_operator_gids: Vec::new(),
            control_monitor_uids: Vec::new(),
            control_monitor_gids: Vec::new(),
            control_idle_timeout_ms: 10_000,
            autostart: true,
            resume_unfinished: true,
            label: None,
            queue_bytes: 64 << 20,
            queue_policy: QueuePolicy::Block,
            max_frame_bytes: 32 << 20,
            max_sensors: 64,
            max_channels: 64,
            max_hello_bytes: 64 << 10,
            hello_timeout_ms: 10_000,
            flush_interval_ms: 100,
            fsync: "periodic".into(),
            fsync_interval_ms: 1000,
            fsync_bytes: 64 << 20,
            buffer_bytes: 256 << 10,
            direct_io: false,
            direct_io_min_sample_bytes: 64 << 10,
            writeback_bytes: roverlog_core::format::append::DEFAULT_WRITEBACK_BYTES,
            blob_sync_threads: roverlog_core::format::blob::DEFAULT_SYNC_THREADS,
            lzmaf_preset: 0,
            compress_threads: 0,
            formats: BTreeMap::new(),
            rotate_bytes: 0,
            rotate_seconds: 0,
            min_free_bytes: 256 << 20,
            disk_check_interval_ms: 1000,
            stats_interval_ms: 5000,
            shutdown_deadline_ms: 10_000,
            drain_quiet_ms: 100,
            snapshot: false,
            pre_trigger_seconds: 10.0,
            snapshot_bytes: 256 << 20,
            debug_write_delay_ms: 0,
            debug_recovery_delay_ms: 0,
            sensors: BTreeMap::new(),
            silent_periods: 5.0,
            missing_after_ms: 10_000,
            learn_rate_ms: 5_000,
            rate_window_ms: 2_000,
            queue_high_fraction: 0.8,
            disk_low_seconds: 600,
            alarm_command: Vec::new(),
            alarm_command_timeout_ms: 5_000,
            health_interval_ms: 250,
            receive_timestamps: true,
            receive_timestamps_except: Vec::new(),
            clock_step_threshold_s: 1.0,
            http_listen: None,
            http_token: None,
            foxglove_listen: None,
            foxglove_max_hz: 10.0,
            foxglove_sensor_hz: BTreeMap::new(),
        }
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::Config(msg.into())
}

impl Config {
    /// Reads and validates a JSON config file.
    pub fn load(path: &Path) -> Result<Config> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let cfg: Config = serde_json::from_slice(&bytes).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks values that serde cannot: ranges, names, relations between keys.
    pub fn validate(&self) -> Result<()> {
        self.socket_mode_bits()?;
        self.fsync_policy()?;
        super::http::listen_address(self)?;
        super::foxglove_live::listen_address(self)?;
        if self.ingest_socket == self.control_socket {
            return Err(bad(format!(
                "ingest_socket and control_socket are the same path ({})",
                self.ingest_socket.display()
            )));
        }
        if self.queue_bytes < 1024 {
            return Err(bad("queue_bytes must be at least 1024"));
        }
        if self.max_frame_bytes < 8 {
            return Err(bad("max_frame_bytes must be at least 8 (a timestamp)"));
        }
        if self.max_frame_bytes > 1 << 30 {
            return Err(bad("max_frame_bytes must be at most 1 GiB"));
        }
        if u64::from(self.max_frame_bytes) + 4 > self.queue_bytes {
            return Err(bad(format!(
                "max_frame_bytes ({}) must fit in queue_bytes ({}) or a frame could never be queued",
                self.max_frame_bytes, self.queue_bytes
            )));
        }
        if self.queue_bytes > (usize::MAX >> 4) as u64 {
            return Err(bad("queue_bytes is too large"));
        }
        for (k, v) in [
            ("max_sensors", self.max_sensors),
            ("max_channels", self.max_channels),
            ("max_hello_bytes", self.max_hello_bytes),
            ("buffer_bytes", self.buffer_bytes),
            (
                "direct_io_min_sample_bytes",
                self.direct_io_min_sample_bytes,
            ),
            ("blob_sync_threads", self.blob_sync_threads),
        ] {
            if v == 0 {
                return Err(bad(format!("{k} must be positive")));
            }
        }
        // meta.json holds `ts` besides the data channels.
        let most = roverlog_core::format::meta::MAX_CHANNELS - 1;
        if self.max_channels > most {
            return Err(bad(format!(
                "max_channels ({}) is over {most}, the most data channels a sensor's meta.json may hold",
                self.max_channels
            )));
        }
        if self.hello_timeout_ms == 0 {
            return Err(bad("hello_timeout_ms must be positive"));
        }
        if self.blob_sync_threads > MAX_BLOB_SYNC_THREADS {
            return Err(bad(format!(
                "blob_sync_threads ({}) is over {MAX_BLOB_SYNC_THREADS}",
                self.blob_sync_threads
            )));
        }
        if !(self.pre_trigger_seconds > 0.0 && self.pre_trigger_seconds <= 86_400.0) {
            return Err(bad(format!(
                "pre_trigger_seconds ({}) must be over 0 and at most a day",
                self.pre_trigger_seconds
            )));
        }
        if self.drain_quiet_ms == 0 || self.drain_quiet_ms >= self.shutdown_deadline_ms {
            return Err(bad(format!(
                "drain_quiet_ms ({}) must be positive and under shutdown_deadline_ms ({})",
                self.drain_quiet_ms, self.shutdown_deadline_ms
            )));
        }
        if self.flush_interval_ms == 0 || self.stats_interval_ms == 0 {
            return Err(bad(
                "flush_interval_ms and stats_interval_ms must be positive",
            ));
        }
        for (name, h) in &self.sensors {
            validate_name("sensor", name)?;
            if h.expected_hz
                .is_some_and(|hz| !(hz.is_finite() && hz > 0.0))
            {
                return Err(bad(format!(
                    "sensors.{name}.expected_hz must be a positive number"
                )));
            }
            if !(h.tolerance.is_finite() && h.tolerance >= 0.0) {
                return Err(bad(format!(
                    "sensors.{name}.tolerance must be a number >= 0"
                )));
            }
        }
        if !(self.clock_step_threshold_s.is_finite() && self.clock_step_threshold_s > 0.0) {
            return Err(bad("clock_step_threshold_s must be a positive number"));
        }
        if !(self.silent_periods.is_finite() && self.silent_periods > 0.0) {
            return Err(bad("silent_periods must be a positive number"));
        }
        if !(self.queue_high_fraction > 0.0 && self.queue_high_fraction <= 1.0) {
            return Err(bad("queue_high_fraction must be in (0, 1]"));
        }
        if self.health_interval_ms == 0
            || self.rate_window_ms == 0
            || self.alarm_command_timeout_ms == 0
        {
            return Err(bad(
                "health_interval_ms, rate_window_ms and alarm_command_timeout_ms must be positive",
            ));
        }
        if self.control_idle_timeout_ms == 0 {
            return Err(bad("control_idle_timeout_ms must be positive"));
        }
        let no_operators =
            self.control_operator_uids.is_empty() && self.control_operator_gids.is_empty();
        if no_operators
            && !(self.control_monitor_uids.is_empty() && self.control_monitor_gids.is_empty())
        {
            return Err(bad(
                "control_monitor_uids/gids need control_operator_uids/gids too (else nobody could stop the daemon)",
            ));
        }
        if self.disk_check_interval_ms == 0 {
            return Err(bad("disk_check_interval_ms must be positive"));
        }
        if self.lzmaf_preset > 9 {
            return Err(bad("lzmaf_preset must be 0..=9"));
        }
        if let Some(label) = &self.label {
            validate_label(label)?;
        }
        for (sensor, chans) in &self.formats {
            validate_name("sensor", sensor)?;
            for (ch, f) in chans {
                validate_name("channel", ch)?;
                let parsed = ChannelFormat::parse(f);
                if !matches!(
                    parsed,
                    ChannelFormat::Raw | ChannelFormat::Lzmaf | ChannelFormat::Mjpg
                ) {
                    return Err(bad(format!(
                        "formats.{sensor}.{ch}: {f:?} (overrides may only be \"raw\", \"lzmaf\" or \"mjpg\")"
                    )));
                }
            }
        }
        Ok(())
    }

    /// `socket_mode` as permission bits.
    pub fn socket_mode_bits(&self) -> Result<u32> {
        let m = u32::from_str_radix(self.socket_mode.trim_start_matches("0o"), 8)
            .map_err(|_| bad(format!("socket_mode {:?} is not octal", self.socket_mode)))?;
        if m > 0o777 {
            return Err(bad(format!(
                "socket_mode {:?} is over 0777",
                self.socket_mode
            )));
        }
        Ok(m)
    }

    /// The typed fsync policy.
    pub fn fsync_policy(&self) -> Result<FsyncPolicy> {
        match self.fsync.as_str() {
            "periodic" => {
                if self.fsync_interval_ms == 0 {
                    return Err(bad(
                        "fsync_interval_ms must be positive with fsync \"periodic\"",
                    ));
                }
                Ok(FsyncPolicy::Periodic {
                    interval: Duration::from_millis(self.fsync_interval_ms),
                    bytes: if self.fsync_bytes == 0 {
                        u64::MAX
                    } else {
                        self.fsync_bytes
                    },
                })
            }
            "on_request" => Ok(FsyncPolicy::OnRequest),
            other => Err(bad(format!(
                "fsync {other:?} (expected \"periodic\" or \"on_request\")"
            ))),
        }
    }

    /// `compress_threads`, with 0 resolved to the CPU count (at most 8).
    pub fn compress_threads_or_auto(&self) -> usize {
        match self.compress_threads {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(8),
            n => n,
        }
    }

    /// The format a channel declared as `declared` is stored in: its override when one
    /// applies (fixed-size channels may be compressed, `jpg` frames may go into one `mjpg`
    /// video), else as declared (with a warning for an override that does not apply).
    pub fn stored_format(
        &self,
        sensor: &str,
        channel: &str,
        declared: &ChannelFormat,
    ) -> ChannelFormat {
        let Some(f) = self.format_override(sensor, channel) else {
            return declared.clone();
        };
        let applies = match f {
            ChannelFormat::Mjpg => *declared == ChannelFormat::Blob("jpg".into()),
            _ => declared.is_fixed_size(),
        };
        if applies {
            return f;
        }
        tracing::warn!(
            sensor,
            channel,
            "format override {:?} does not apply to a {:?} channel; kept as declared",
            f.as_str(),
            declared.as_str()
        );
        declared.clone()
    }

    /// Adds the daemon's receive-time channel (`ts_recv`, raw `f8`) to a sensor's stored
    /// channels when it is on for `sensor` and the driver did not declare such a channel.
    pub fn add_receive_channel(&self, sensor: &str, meta: &mut roverlog_core::format::SensorMeta) {
        let on =
            self.receive_timestamps && !self.receive_timestamps_except.iter().any(|s| s == sensor);
        if on && meta.get(RECEIVE_TS_CHANNEL).is_none() {
            meta.channels.push((
                RECEIVE_TS_CHANNEL.to_string(),
                roverlog_core::format::ChannelMeta::new(
                    ChannelFormat::Raw,
                    roverlog_core::format::DType::F8,
                    vec![],
                    "daemon receive time, epoch seconds (CLOCK_REALTIME when the frame was parsed)",
                ),
            ));
        }
    }

    /// The format override for one channel, if any.
    pub fn format_override(&self, sensor: &str, channel: &str) -> Option<ChannelFormat> {
        self.formats
            .get(sensor)
            .and_then(|m| m.get(channel))
            .map(|f| ChannelFormat::parse(f))
    }
}

/// A trace label: becomes part of a directory name under `data_root`, so only
/// `[A-Za-z0-9._-]`, at most 64 bytes, not starting with `.` or `-` (no traversal, no
/// hidden directories, no option-looking names).
pub fn validate_label(label: &str) -> Result<()> {
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
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn max_channels_cannot_exceed_what_meta_json_may_hold() {
        let most = roverlog_core::format::meta::MAX_CHANNELS - 1;
        let cfg = |n| Config {
            max_channels: n,
            ..Config::default()
        };
        cfg(most).validate().unwrap();
        let e = cfg(most + 1).validate().unwrap_err().to_string();
        assert!(e.contains("max_channels (1024)"), "{e}");
    }

    #[test]
    fn drain_quiet_must_be_positive_and_under_the_shutdown_deadline() {
        let cfg = |q| Config {
            drain_quiet_ms: q,
            shutdown_deadline_ms: 1000,
            ..Config::default()
        };
        cfg(999).validate().unwrap();
        for q in [0, 1000, 5000] {
            let e = cfg(q).validate().unwrap_err().to_string();
            assert!(e.contains(&format!("drain_quiet_ms ({q})")), "{e}");
        }
    }

    #[test]
    fn blob_sync_threads_must_be_from_1_to_the_cap() {
        let cfg = |n| Config {
            blob_sync_threads: n,
            ..Config::default()
        };
        cfg(1).validate().unwrap();
        cfg(MAX_BLOB_SYNC_THREADS).validate().unwrap();
        let e = cfg(0).validate().unwrap_err().to_string();
        assert!(e.contains("blob_sync_threads must be positive"), "{e}");
        let e = cfg(MAX_BLOB_SYNC_THREADS + 1)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("blob_sync_threads (1025) is over 1024"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(serde_json::from_str::<Config>(r#"{"queue_byte": 5}"#).is_err());
    }

    #[test]
    fn example_and_readme_document_every_key() {
        let example = include_str!("../../../config/roverlog.example.json");
        let readme = include_str!("../../../config/README.md");
        let parsed: Config = serde_json::from_str(example).unwrap();
        parsed.validate().unwrap();
        let example: serde_json::Value = serde_json::from_str(example).unwrap();
        let defaults = serde_json::to_value(Config::default()).unwrap();
        for key in defaults.as_object().unwrap().keys() {
            assert!(example.get(key).is_some(), "{key} missing from the example");
            assert!(
                readme.contains(&format!("| `{key}` |")),
                "{key} missing from README"
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
