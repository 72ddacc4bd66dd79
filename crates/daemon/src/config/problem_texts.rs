//! Every [`ConfigProblem`]'s message, exactly as the daemon printed it when it was free text:
//! each expected text is the old `format!` string, filled with the same values. (Here, not
//! beside the type: the limits are the config's, and `error` imports nothing of `config`.)

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{MAX_BLOB_SYNC_THREADS, MIN_TOKEN_CHARS};
use crate::error::{ConfigProblem, Error};

#[test]
fn messages_are_the_ones_users_read() {
    let (name, ch, f, text) = ("cam", "image", "lzma", "0999");
    let (listen, addr): (&str, SocketAddr) = ("0.0.0.0:8080", "0.0.0.0:8080".parse().unwrap());
    let path = PathBuf::from("run/roverd.sock");
    let location = || {
        roverlog_export::location::LocationMapping::from_pairs("gps", [("lat", "pos[0]")])
            .unwrap_err()
    };
    let rate = || roverlog_offload::rate::parse_bytes("fast").unwrap_err();
    let most = roverlog_core::format::meta::MAX_CHANNELS - 1;
    let limit_files = super::durability::MAX_BLOB_OPEN_FILES;
    for (problem, want) in [
        (
            ConfigProblem::NotPositive {
                keys: vec!["buffer_bytes"],
            },
            format!("{} must be positive", "buffer_bytes"),
        ),
        (
            ConfigProblem::NotPositive {
                keys: vec!["flush_interval_ms", "stats_interval_ms"],
            },
            "flush_interval_ms and stats_interval_ms must be positive".into(),
        ),
        (
            ConfigProblem::NotPositive {
                keys: vec![
                    "health_interval_ms",
                    "rate_window_ms",
                    "alarm_command_timeout_ms",
                ],
            },
            "health_interval_ms, rate_window_ms and alarm_command_timeout_ms must be positive"
                .into(),
        ),
        (
            ConfigProblem::NotPositiveNumber {
                key: "silent_periods",
            },
            "silent_periods must be a positive number".into(),
        ),
        (
            ConfigProblem::SameSocket { path: path.clone() },
            format!(
                "ingest_socket and control_socket are the same path ({})",
                path.display()
            ),
        ),
        (
            ConfigProblem::MonitorsWithoutOperators,
            "control_monitor_uids/gids need control_operator_uids/gids too (else nobody could stop the daemon)".into(),
        ),
        (
            ConfigProblem::SocketModeNotOctal { text: text.into() },
            format!("socket_mode {text:?} is not octal"),
        ),
        (
            ConfigProblem::SocketModeTooLarge { text: text.into() },
            format!("socket_mode {text:?} is over 0777"),
        ),
        (
            ConfigProblem::QueueBytesTooSmall { queue_bytes: 10 },
            "queue_bytes must be at least 1024".into(),
        ),
        (
            ConfigProblem::QueueBytesTooLarge {
                queue_bytes: u64::MAX,
            },
            "queue_bytes is too large".into(),
        ),
        (
            ConfigProblem::FrameBytesTooSmall { max_frame_bytes: 4 },
            "max_frame_bytes must be at least 8 (a timestamp)".into(),
        ),
        (
            ConfigProblem::FrameBytesTooLarge {
                max_frame_bytes: 2 << 30,
            },
            "max_frame_bytes must be at most 1 GiB".into(),
        ),
        (
            ConfigProblem::FrameOverQueue {
                max_frame_bytes: 2048,
                queue_bytes: 1024,
            },
            format!(
                "max_frame_bytes ({}) must fit in queue_bytes ({}) or a frame could never be queued",
                2048, 1024
            ),
        ),
        (
            ConfigProblem::MaxChannels {
                max_channels: 999,
                most,
            },
            format!(
                "max_channels ({}) is over {most}, the most data channels a sensor's meta.json may hold",
                999
            ),
        ),
        (
            ConfigProblem::BlobSyncThreads {
                threads: 5000,
                limit: MAX_BLOB_SYNC_THREADS,
            },
            format!(
                "blob_sync_threads ({}) is over {MAX_BLOB_SYNC_THREADS}",
                5000
            ),
        ),
        (
            ConfigProblem::BlobOpenFiles {
                files: 0,
                limit: limit_files,
            },
            format!("blob_max_open_files ({}) must be from 1 to {limit_files}", 0),
        ),
        (
            ConfigProblem::FsyncInterval,
            "fsync_interval_ms must be positive with fsync \"periodic\"".into(),
        ),
        (
            ConfigProblem::Fsync {
                fsync: "always".into(),
            },
            format!(
                "fsync {:?} (expected \"periodic\" or \"on_request\")",
                "always"
            ),
        ),
        (
            ConfigProblem::LzmafPreset { preset: 12 },
            "lzmaf_preset must be 0..=9".into(),
        ),
        (
            ConfigProblem::LzmafStoreAbove { fraction: 1.5 },
            format!(
                "lzmaf_store_above must be a fraction of the queue in (0, 1], not {}",
                1.5
            ),
        ),
        (
            ConfigProblem::FormatOverride {
                sensor: name.into(),
                channel: ch.into(),
                format: f.into(),
            },
            format!(
                "formats.{name}.{ch}: {f:?} (overrides may only be \"raw\", \"lzmaf\" or \"mjpg\")"
            ),
        ),
        (
            ConfigProblem::DrainQuiet {
                drain_quiet_ms: 9000,
                shutdown_deadline_ms: 5000,
            },
            format!(
                "drain_quiet_ms ({}) must be positive and under shutdown_deadline_ms ({})",
                9000, 5000
            ),
        ),
        (
            ConfigProblem::PreTrigger { seconds: 0.0 },
            format!(
                "pre_trigger_seconds ({}) must be over 0 and at most a day",
                0.0
            ),
        ),
        (
            ConfigProblem::ExpectedHz {
                sensor: name.into(),
            },
            format!("sensors.{name}.expected_hz must be a positive number"),
        ),
        (
            ConfigProblem::Tolerance {
                sensor: name.into(),
            },
            format!("sensors.{name}.tolerance must be a number >= 0"),
        ),
        (
            ConfigProblem::QueueHighFraction { fraction: 0.0 },
            "queue_high_fraction must be in (0, 1]".into(),
        ),
        (
            ConfigProblem::HttpToken {
                min: MIN_TOKEN_CHARS,
            },
            format!(
                "http_token must be at least {MIN_TOKEN_CHARS} characters, without spaces or control characters"
            ),
        ),
        (
            ConfigProblem::AllowedHost {
                entry: "a b".into(),
            },
            format!(
                "http_allowed_hosts entry {:?} is not a host name or IP address with an optional port (\"rover.local\", \"rover.local:9000\", \"10.8.0.2:8080\", \"[fd00::2]:8080\")",
                "a b"
            ),
        ),
        (
            ConfigProblem::HttpListen {
                listen: "here".into(),
            },
            format!(
                "http_listen {:?} is not an IP address with a port (\"127.0.0.1:8080\", \"[::1]:8080\")",
                "here"
            ),
        ),
        (
            ConfigProblem::HttpNotLoopback {
                addr,
                min: MIN_TOKEN_CHARS,
            },
            format!(
                "http_listen {addr} is not a loopback address: set http_token (a secret of at least {MIN_TOKEN_CHARS} characters) so nobody else on the network can control the daemon"
            ),
        ),
        (
            ConfigProblem::MessageRate {
                sensor: None,
                hz: 0.0,
            },
            format!(
                "{} must be a positive number of messages per second, not {}",
                "foxglove_max_hz", 0.0
            ),
        ),
        (
            ConfigProblem::MessageRate {
                sensor: Some(name.into()),
                hz: -1.0,
            },
            {
                // The old code named the key first, then filled the sentence with it.
                let k = format!("foxglove_sensor_hz.{name}");
                format!(
                    "{k} must be a positive number of messages per second, not {}",
                    -1.0
                )
            },
        ),
        (
            ConfigProblem::FoxgloveListen {
                listen: listen.into(),
            },
            format!(
                "foxglove_listen {:?} is not an IP address with a port (\"127.0.0.1:8765\")",
                listen
            ),
        ),
        (
            ConfigProblem::FoxgloveNotLoopback { addr },
            format!(
                "foxglove_listen {addr} is not a loopback address: the live feed has no authentication, so it serves this machine only (reach it from elsewhere through an SSH tunnel)"
            ),
        ),
        (
            ConfigProblem::FoxgloveLocation(location()),
            format!("foxglove_location.{}", location()),
        ),
        (
            ConfigProblem::OffloadNoDest,
            "offload: dest is missing (s3://bucket/prefix or a directory)".into(),
        ),
        (
            ConfigProblem::OffloadWhen {
                when: "never".into(),
            },
            format!(
                "offload: when {:?} (expected \"idle\" or \"always\")",
                "never"
            ),
        ),
        (
            ConfigProblem::OffloadRate(rate()),
            format!("offload: rate {}", rate()),
        ),
        (
            ConfigProblem::OffloadInterval,
            "offload: interval_ms must be more than 0".into(),
        ),
        (
            ConfigProblem::KeepFreeNotPercent { text: "lots".into() },
            format!(
                "offload: keep_free {:?}: not a percentage (e.g. \"20%\")",
                "lots"
            ),
        ),
        (
            ConfigProblem::KeepFreeRange { text: "100%".into() },
            format!(
                "offload: keep_free {:?}: must be from 0% to under 100%",
                "100%"
            ),
        ),
    ] {
        assert_eq!(Error::Config(problem).to_string(), format!("config: {want}"));
    }
}
