//! The configuration document as written: one JSON object, every key optional, unknown keys
//! refused. serde reads it into [`RawConfig`] and nothing more; what the values mean and
//! whether they are allowed is decided when [`super::Config`] is built from it (ripgrep's
//! low-level/high-level split). It is also what `--print-config` prints and what each trace
//! keeps as `config.yaml`, so its keys and defaults are the documented ones.
//! [`QueuePolicy`] and [`SensorHealth`] are values serde already reads typed; they live here
//! so that the sections depend on this file and never the reverse.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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

/// The configuration document (see `config/README.md`); [`super::Config`] is its checked form.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawConfig {
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
    /// Most files of a blob channel open between fsyncs; at the bound they are fsynced and
    /// closed early.
    pub blob_max_open_files: usize,
    pub lzmaf_preset: u32,
    /// Threads of the daemon's `lzmaf` compression pool, all sensors together; 0: every CPU
    /// the process may use (affinity mask and cgroup quota).
    pub compress_threads: usize,
    /// The most bytes of `lzmaf` frames in flight in the compression pool (sent, not yet
    /// appended), all sensors together.
    pub compress_inflight_bytes: u64,
    /// Store an `lzmaf` frame uncompressed (same `.xz` framing) when more than this fraction
    /// of its sensor's queue budget waits behind it; 1: never.
    pub lzmaf_store_above: f64,
    /// `{"sensor": {"channel": "lzmaf"}}`: store a channel in another format than declared.
    pub formats: BTreeMap<String, BTreeMap<String, String>>,
    pub rotate_bytes: u64,
    pub rotate_seconds: u64,
    pub min_free_bytes: u64,
    /// After the disk guard, a full disk or a failed disk stopped the recording, it starts
    /// again by itself once this many bytes are free (and the data root takes a write).
    pub resume_free_bytes: u64,
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
    /// Only builds with the `test-knobs` feature know this key (see `knobs`).
    #[cfg(feature = "test-knobs")]
    pub debug_write_delay_ms: u64,
    /// Test-only: start-up recovery takes this much longer (shows EXTEND_TIMEOUT_USEC).
    #[cfg(feature = "test-knobs")]
    pub debug_recovery_delay_ms: u64,
    /// Test-only: compressing each `lzmaf` frame takes this much longer (a slow compressor).
    #[cfg(feature = "test-knobs")]
    pub debug_compress_delay_ms: u64,
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
    /// More `Host` names a loopback dashboard answers (a port forward's or a VPN's name,
    /// `"rover.local:9000"`); loopback names are always accepted.
    pub http_allowed_hosts: Vec<String>,
    /// The live Foxglove feed's WebSocket address (loopback only); `null`: no feed.
    pub foxglove_listen: Option<String>,
    /// Messages per second per channel on the live feed, at most.
    pub foxglove_max_hz: f64,
    /// Per sensor: its own `foxglove_max_hz`.
    pub foxglove_sensor_hz: BTreeMap<String, f64>,
    /// Per sensor: where its position is (`{"latitude": "pos[0]", ...}`), shown on the feed
    /// as `foxglove.LocationFix` too.
    pub foxglove_location: BTreeMap<String, BTreeMap<String, String>>,
    /// Offload sealed traces in the background (`null`: not at all); see [`RawOffload`].
    pub offload: Option<RawOffload>,
}

/// Config `offload`: the `roverlog offload` job, run by the daemon (config/README.md,
/// "Offload").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RawOffload {
    /// `s3://bucket/prefix` (the `AWS_*` variables of the daemon's environment) or a directory.
    pub dest: String,
    /// `"idle"`: only while nothing is recorded; `"always"`: while recording too.
    pub when: String,
    /// The bandwidth cap (`"20MB/s"`); `null`: none.
    pub rate: Option<String>,
    /// Remove each trace once all its objects are verified.
    pub delete: bool,
    /// Remove the oldest verified traces while data_root's filesystem has less free (`"20%"`).
    pub keep_free: Option<String>,
    /// How often the job looks for new sealed traces, and retries after an error.
    pub interval_ms: u64,
}

impl Default for RawOffload {
    fn default() -> Self {
        RawOffload {
            dest: String::new(),
            when: "idle".into(),
            rate: None,
            delete: false,
            keep_free: None,
            interval_ms: 30_000,
        }
    }
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig {
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
            blob_max_open_files: roverlog_core::format::blob::DEFAULT_MAX_OPEN,
            lzmaf_preset: 0,
            compress_threads: 0,
            compress_inflight_bytes: 64 << 20,
            lzmaf_store_above: 0.5,
            formats: BTreeMap::new(),
            rotate_bytes: 0,
            rotate_seconds: 0,
            min_free_bytes: 256 << 20,
            resume_free_bytes: 512 << 20,
            disk_check_interval_ms: 1000,
            stats_interval_ms: 5000,
            shutdown_deadline_ms: 10_000,
            drain_quiet_ms: 100,
            snapshot: false,
            pre_trigger_seconds: 10.0,
            snapshot_bytes: 256 << 20,
            #[cfg(feature = "test-knobs")]
            debug_write_delay_ms: 0,
            #[cfg(feature = "test-knobs")]
            debug_recovery_delay_ms: 0,
            #[cfg(feature = "test-knobs")]
            debug_compress_delay_ms: 0,
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
            http_allowed_hosts: Vec::new(),
            foxglove_listen: None,
            foxglove_max_hz: 10.0,
            foxglove_sensor_hz: BTreeMap::new(),
            foxglove_location: BTreeMap::new(),
            offload: None,
        }
    }
}

impl RawConfig {
    /// Reads a config file (JSON; a key missing from it keeps its default).
    pub fn load(path: &Path) -> Result<RawConfig> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_slice(&bytes).map_err(|error| {
            Error::Core(roverlog_core::Error::Json {
                path: path.to_path_buf(),
                error,
            })
        })
    }
}
