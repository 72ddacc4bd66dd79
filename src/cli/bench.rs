//! `roverlog bench`'s arguments; what it runs is [`roverlog_bench::runner`] (the scenarios,
//! their table and their reports live in the bench crate, beside the load generators and
//! baselines they drive).

use std::path::PathBuf;

use roverlog_bench::runner;

use super::exit::{Exit, Fail, Outcome};

/// Benchmark the daemon's ingest path against same-run baselines.
///
/// Starts `roverlog daemon` (this executable) with its data and sockets under DIR, drives it
/// with synthetic sensors, stops it with SIGTERM and checks every sample sent is on disk.
/// Scenarios: large (4 MiB frames vs dd conv=fdatasync), direct (the same with the daemon's
/// direct_io on, vs dd oflag=direct), imu (one write() per 44-byte sample
/// vs a plain socket sink and the upstream-style Python writer), batched (256 samples per
/// write()), lzmaf (256 KiB frames compressed, vs a 20 Hz lidar), dashboard (the imu load
/// with a client polling the daemon's dashboard at 10 Hz vs none, alternating rounds),
/// foxglove (the imu load with a client subscribed to the whole live Foxglove feed vs none).
/// full-size (only when named, alone: no daemon): the red-rover rig's one-hour trace
/// generated, single-sample reads per format against a 100-sample trace (ratio), and the
/// verbs' peak RSS and seconds on it against cat of its files.
/// hour-trace (only when named, alone): writes that hour trace (2 minutes with --quick) into
/// a fresh directory under --dir, keeps it and prints its path (for python/benches).
/// soak (only when named, alone; not in CI): steady imu 200 Hz, gps 10 Hz and camera 10 Hz
/// with expected_hz, snapshot mode with a trigger, a rotation and the trigger's stop every
/// --minutes*60/12 s (at most 5 min), the dashboard polled every second, a live Foxglove
/// client and an alarm_command, for --minutes; reports false alarms (must be 0) and the
/// daemon's RSS at start, middle and end.
/// rig (run alone, not by default: `--only rig`): the red-rover rig's four sensors (camera
/// 1920x1080 JPEG at 30 Hz, lidar 128x2048 rfl/nir/rng lzmaf at 10 Hz, radar iq at 20 Hz,
/// imu at 100 Hz) as separate driver processes pushing --rig-seconds of the rig as fast as
/// the daemon takes them, then the same samples through upstream roverd's Python writers
/// (--upstream-python) or, without it, scripts/bench/python_writer.py's stdlib imitation;
/// its last line: x real time, daemon CPU s per rig s, the writers' figures, drops, peak RSS.
/// The daemon's resident memory is sampled throughout and compared with its configured
/// budgets.
/// faults (run alone, as root: `--only faults`): a failing disk against a real daemon, each
/// scenario --rounds times: an fdatasync failing with EIO (libfiu), ENOSPC on a loop-mounted
/// ext4, the ext4 shutdown ioctl; samples acknowledged durable but lost (must be 0), the
/// disk_error alarm's delay, peak RSS (docs/disk-failure.md).
/// camera (run alone: `--only camera`): `roverlog driver camera` replaying 60 ffmpeg-made
/// 1920x1080 JPEGs at 60 fps for --rig-seconds (10; 2 with --quick) into a real daemon; the
/// driver's CPU per video second (target <= 5% of a core) against ffmpeg decoding and
/// encoding the same frames (upstream's collector's way).
/// rosbag (run alone: `--only rosbag`): `roverlog rosbag` on a trace of --lidar-frames
/// 128x2048 lidar frames and a 100 Hz IMU against upstream's `roverd rosbag` in
/// --upstream-python, rounds alternating; CPU and wall of each, and the ratios.
/// offload (run alone: `--only offload`): `roverlog offload` against `rclone copy` to a
/// Garage on 127.0.0.1, 4 requests in flight each; and the bytes re-sent after 3 kill -9.
///
/// Exit codes: 0 every scenario ran and the data checks passed (targets may be missed: that
/// is reported, not an error); 1 a scenario failed, data was lost, or the daemon did not exit
/// 0 (with --disk: the disk is slower than --load-mbps, or no fsync interval holds it;
/// with rig: a frame was dropped); 2 bad arguments, the daemon could not be started, or
/// (rig) one of our driver processes failed.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Directory to work in (a fresh subdirectory is made inside). Default: ./target/bench-tmp
    /// when ./target exists, else the system temp dir. Its filesystem is what is measured.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Measure this directory's disk instead (write and fsync latency per block size,
    /// throughput) and, per candidate fsync interval, whether writing and syncing one
    /// interval of `--load-mbps` fits in it; then advice, each setting with its reason:
    /// `fsync_interval_ms`, the per-sensor `queue_bytes`, or a warning when the disk is
    /// slower than the load.
    #[arg(long, value_name = "DIR")]
    disk: Option<PathBuf>,
    /// The sensor load for `--disk`'s advice, all sensors together, MB/s (10^6 bytes/s; the
    /// advice prints MiB/s).
    #[arg(long, default_value_t = 50.0)]
    load_mbps: f64,
    /// The busiest sensor's share of `--load-mbps`, MB/s, for `--disk`'s per-sensor
    /// `queue_bytes`. Default: all of it (one sensor).
    #[arg(long)]
    sensor_mbps: Option<f64>,
    /// Bytes written per block size by `--disk`, MiB.
    #[arg(long, default_value_t = 256)]
    disk_mib: u64,
    /// Concurrent sensors in the imu and batched scenarios.
    #[arg(long, default_value_t = 4)]
    sensors: usize,
    /// Small sizes for a smoke test (seconds); the figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Run only these scenarios (comma-separated): large, direct, imu, batched, lzmaf,
    /// dashboard, foxglove; or full-size, hour-trace, soak, faults, rig, camera, rosbag or
    /// offload alone.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// How long `--only soak` runs, minutes (the rotation period is a twelfth of it, at
    /// most 5 minutes).
    #[arg(long, default_value_t = 60.0)]
    minutes: f64,
    /// rig: seconds of the rig to record (default 60; 2 with --quick, which also makes the
    /// frames tiny). camera: seconds of video to replay (default 10; 2 with --quick).
    #[arg(long, value_name = "SECONDS")]
    rig_seconds: Option<f64>,
    /// rig: a Python where `import roverd` (upstream's format package, with opencv) works,
    /// e.g. /tmp/venv/bin/python; its writers are measured on the same samples. Default:
    /// $ROVERLOG_UPSTREAM_PYTHON; without either, scripts/bench/python_writer.py's stdlib
    /// imitation is measured instead (the report says so).
    #[arg(long, value_name = "PYTHON")]
    upstream_python: Option<PathBuf>,
    /// Python with numpy for the upstream-style baseline. Default: scripts/py-env.sh's venv.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Keep the working directory (traces, config, daemon.log; with `--only rig`, the Python
    /// writers' traces too) afterwards.
    #[arg(long)]
    keep: bool,
    /// Bytes per frame in the large and direct scenarios (the same total bytes are sent:
    /// fewer frames when larger).
    #[arg(long, default_value_t = runner::LARGE_FRAME)]
    frame_bytes: usize,
    /// Daemon config keys to set on top of the bench's (a JSON object), e.g.
    /// '{"fsync": "on_request"}': to see what a setting costs.
    #[arg(long, value_name = "JSON")]
    daemon_config: Option<String>,
    /// Alternating rounds (baseline, daemon) in the large, direct, imu and rig scenarios; more
    /// rounds average out more noise. Default 3 (1 with --quick; 1 for rig).
    #[arg(long)]
    rounds: Option<usize>,
    /// rosbag: lidar frames (128 x 2048) in the trace it converts (ten IMU samples each).
    #[arg(long, default_value_t = 300)]
    lidar_frames: usize,
}

impl From<Args> for runner::Options {
    fn from(a: Args) -> runner::Options {
        runner::Options {
            dir: a.dir,
            disk: a.disk,
            load_mbps: a.load_mbps,
            sensor_mbps: a.sensor_mbps,
            disk_mib: a.disk_mib,
            sensors: a.sensors,
            quick: a.quick,
            json: a.json,
            only: a.only,
            minutes: a.minutes,
            rig_seconds: a.rig_seconds,
            upstream_python: a.upstream_python,
            python: a.python,
            keep: a.keep,
            frame_bytes: a.frame_bytes,
            daemon_config: a.daemon_config,
            rounds: a.rounds,
            lidar_frames: a.lidar_frames,
        }
    }
}

/// `roverlog bench`: the runner's `Ok(true)` is exit 0, `Ok(false)` (a scenario failed, data
/// lost, the disk does not hold the load) 1, an error 2, printed `roverlog bench: error: ...`.
pub fn main(args: Args) -> anyhow::Result<Outcome> {
    let passed = runner::main(args.into()).fail(Exit::Usage, "roverlog bench: error")?;
    Ok(if passed {
        Outcome::Ok
    } else {
        Outcome::Problems
    })
}

/// `roverlog bench-rig-driver`: one rig stream into a running daemon (started by `bench --only
/// rig`, one process per stream). Prints `ready` once connected, waits for a line on stdin,
/// sends, and prints one JSON line with what it did.
#[derive(clap::Args)]
pub struct DriverArgs {
    /// The daemon's ingest socket.
    #[arg(long)]
    socket: PathBuf,
    /// camera, lidar, radar or imu.
    #[arg(long)]
    stream: String,
    /// The frames directory `bench` made (holding rig.json).
    #[arg(long)]
    frames: PathBuf,
    /// Rig seconds to send.
    #[arg(long)]
    seconds: f64,
    /// The first sample's timestamp, epoch seconds.
    #[arg(long)]
    t0: f64,
    /// The frames are the tiny ones.
    #[arg(long)]
    tiny: bool,
    /// The trace directory, for the collector's sidecar files (`lidar.json`).
    #[arg(long)]
    trace_dir: Option<PathBuf>,
}

/// Exit 0, or 1 ([`Exit::Runtime`]) with `roverlog bench-rig-driver STREAM: error: ...`.
pub fn driver_main(a: DriverArgs) -> anyhow::Result<Outcome> {
    let prefix = format!("roverlog bench-rig-driver {}: error", a.stream);
    runner::rig::driver_main(runner::rig::Driver {
        socket: a.socket,
        stream: a.stream,
        frames: a.frames,
        seconds: a.seconds,
        t0: a.t0,
        tiny: a.tiny,
        trace_dir: a.trace_dir,
    })
    .fail(Exit::Runtime, prefix)?;
    Ok(Outcome::Ok)
}
