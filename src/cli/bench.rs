//! `roverlog bench`: runs the real daemon as a child process, drives it with
//! [`roverlog_bench::load`], and prints its figures next to baselines measured in the same
//! run on the same directory, as ratios. The machine this runs on is shared and noisy, so
//! only ratios measured minutes apart mean anything; absolute figures are for the record.
//!
//! A run that loses data is a failure, not a figure: after SIGTERM (which must exit 0) every
//! sensor's files are checked with [`roverlog_core::format::check_sensor`] and must hold exactly
//! the samples sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use roverlog_bench::baselines::{self, Input, Leave};
use roverlog_bench::load::{self, LoadSpec, Workload};
use roverlog_bench::{procfs, Throughput};
use roverlog_core::format::{check_sensor, Depth};
use roverlog_daemon::events::EVENTS_DIR;
use roverlog_daemon::Config;

mod child;
mod dashboard;
mod disk;
mod faults;
mod foxglove;
mod full_size;
mod hour_trace;
mod peers;
mod report;
pub(super) mod rig;
mod rosbag;
mod scenario;
mod soak;
mod verb_floor;

use scenario::{check_data, python_writer, run_scenario};

use child::{make_work_dir, write_config, DaemonChild, RemoveOnDrop};
use report::print_table;

const SCENARIOS: [&str; 7] = [
    "large",
    "direct",
    "imu",
    "batched",
    "lzmaf",
    "dashboard",
    "foxglove",
];
/// The one-hour rig trace read at full size ([`full_size`]): run only when named.
const FULL_SIZE: &str = "full-size";
/// The one-hour rig trace written and kept, nothing measured ([`hour_trace`]).
const HOUR_TRACE: &str = "hour-trace";
/// The crew's day with everything on ([`soak`]): run only when named, alone.
const SOAK: &str = "soak";
/// Bytes of one frame in the large-frame scenario.
const LARGE_FRAME: usize = 4 << 20;
/// Largest `--frame-bytes` (the daemon's default `max_frame_bytes` less the frame header).
const MAX_LARGE_FRAME: usize = (32 << 20) - 64;
/// Bytes of one lidar-like frame (u2 128 x 1024) in the `lzmaf` scenario, and the rate it must
/// keep up with.
const LIDAR_FRAME: usize = 256 << 10;
const LIDAR_HZ: f64 = 20.0;
/// IMU frames per `write()` in the batched scenario.
const PER_WRITE: usize = 256;

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
    /// dashboard, foxglove; or full-size, hour-trace, soak, rig, rosbag or offload alone.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// How long `--only soak` runs, minutes (the rotation period is a twelfth of it, at
    /// most 5 minutes).
    #[arg(long, default_value_t = 60.0)]
    minutes: f64,
    /// rig: seconds of the rig to record (default 60; 2 with --quick, which also makes the
    /// frames tiny).
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
    #[arg(long, default_value_t = LARGE_FRAME)]
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

/// How much each scenario sends.
struct Sizes {
    /// The large and imu scenarios alternate baseline and daemon this many times and compare
    /// the totals, so a burst of noise from other jobs hits both sides.
    rounds: usize,
    large_sensors: usize,
    large_frames: u64,
    imu_samples: u64,
    batched_samples: u64,
    lidar_frames: u64,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                rounds: 1,
                large_sensors: 2,
                large_frames: 4,
                imu_samples: 20_000,
                batched_samples: 100_000,
                lidar_frames: 8,
            }
        } else {
            Sizes {
                rounds: 3,
                large_sensors: 2,
                large_frames: 32,
                imu_samples: 150_000,
                batched_samples: 2_000_000,
                lidar_frames: 200,
            }
        }
    }
}

/// What a figure is compared on.
#[derive(Clone, Copy)]
enum Unit {
    MbPerSec,
    SamplesPerSec,
}

impl Unit {
    fn of(self, t: &Throughput) -> f64 {
        match self {
            Unit::MbPerSec => t.mb_per_sec(),
            Unit::SamplesPerSec => t.samples_per_sec(),
        }
    }
    fn label(self) -> &'static str {
        match self {
            Unit::MbPerSec => "MB/s",
            Unit::SamplesPerSec => "samples/s",
        }
    }
}

/// One row of the table: our figure against a baseline (ratio target) or alone (absolute).
struct Row {
    scenario: &'static str,
    ours: Throughput,
    /// The baseline, or why it could not be measured.
    baseline: Option<std::result::Result<Throughput, String>>,
    unit: Unit,
    /// `ours / baseline >= target`, or with no baseline `ours >= target` in `unit`; `None`
    /// for a row shown only to explain another.
    target: Option<f64>,
    /// The ratio of each round alone (when there were several): the noise, in view.
    rounds: Vec<f64>,
    /// Each round's figures in `unit`, ours then the baseline's (when there were several).
    round_figures: Vec<(f64, f64)>,
}

type Rounds = std::result::Result<Vec<Throughput>, String>;

/// Adds one round's baseline figure; the first failure is kept.
fn push_round(acc: &mut Rounds, r: std::result::Result<Throughput, String>) {
    if let Ok(v) = acc {
        match r {
            Ok(t) => v.push(t),
            Err(e) => *acc = Err(e),
        }
    }
}

/// Rounds together: all bytes and samples over all the time.
fn sum_rounds(parts: &[Throughput]) -> Throughput {
    Throughput {
        name: parts.first().map_or(String::new(), |t| t.name.clone()),
        bytes: parts.iter().map(|t| t.bytes).sum(),
        samples: parts.iter().map(|t| t.samples).sum(),
        elapsed: parts.iter().map(|t| t.elapsed).sum(),
    }
}

impl Row {
    /// A row from rounds measured alternately (baseline, ours, baseline, ours...).
    fn new(
        scenario: &'static str,
        ours: &[Throughput],
        baseline: Option<Rounds>,
        unit: Unit,
        target: Option<f64>,
    ) -> Row {
        let round_figures: Vec<(f64, f64)> = match &baseline {
            Some(Ok(b)) if b.len() == ours.len() && ours.len() > 1 => ours
                .iter()
                .zip(b)
                .map(|(o, b)| (unit.of(o), unit.of(b)))
                .collect(),
            _ => Vec::new(),
        };
        let rounds = round_figures.iter().map(|(o, b)| o / b.max(1e-9)).collect();
        Row {
            scenario,
            ours: sum_rounds(ours),
            baseline: baseline.map(|b| b.map(|b| sum_rounds(&b))),
            unit,
            target,
            rounds,
            round_figures,
        }
    }

    fn ratio(&self) -> Option<f64> {
        match &self.baseline {
            Some(Ok(b)) => Some(self.unit.of(&self.ours) / self.unit.of(b).max(1e-9)),
            _ => None,
        }
    }
    fn met(&self) -> Option<bool> {
        match &self.baseline {
            None => Some(self.unit.of(&self.ours) >= self.target?),
            Some(Ok(_)) => Some(self.ratio()? >= self.target?),
            Some(Err(_)) => None,
        }
    }
    fn target_text(&self) -> String {
        match &self.baseline {
            _ if self.target.is_none() => "(for comparison)".into(),
            None => format!(">= {} {}", self.target.unwrap_or(0.0), self.unit.label()),
            Some(_) => format!(">= {}x", self.target.unwrap_or(0.0)),
        }
    }
    fn to_json(&self) -> Value {
        let t = |t: &Throughput| {
            json!({"name": t.name, "bytes": t.bytes, "samples": t.samples,
                   "seconds": t.elapsed.as_secs_f64(), "mb_per_s": t.mb_per_sec(),
                   "samples_per_s": t.samples_per_sec()})
        };
        json!({
            "scenario": self.scenario,
            "unit": self.unit.label(),
            "ours": t(&self.ours),
            "baseline": match &self.baseline {
                None => Value::Null,
                Some(Ok(b)) => t(b),
                Some(Err(e)) => json!({"error": e}),
            },
            "ratio": self.ratio(),
            "round_ratios": self.rounds,
            "round_figures": self.round_figures,
            "target": self.target_text(),
            "met": self.met(),
        })
    }
}

/// The daemon's memory in one scenario against what its configuration allows.
struct Memory {
    scenario: &'static str,
    /// `VmRSS` before any sensor connected: the constant allowed on top of the budget.
    idle: u64,
    /// The largest `VmRSS` sampled (every 10 ms) while the load ran.
    during: u64,
    /// `VmRSS` 1.5 s after the load.
    after: u64,
    /// `VmHWM`: the peak, exact (the sampler only sees every 10 ms).
    hwm: u64,
    /// Queues, read buffers, write buffers (and compression output) the config allows.
    budget: u64,
}

impl Memory {
    fn limit(&self) -> u64 {
        self.budget + self.idle
    }
    fn met(&self) -> bool {
        self.hwm <= self.limit()
    }
    fn to_json(&self) -> Value {
        json!({"scenario": self.scenario, "idle_bytes": self.idle, "during_max_bytes": self.during, "after_bytes": self.after,
               "hwm_bytes": self.hwm, "budget_bytes": self.budget,
               "limit_bytes": self.limit(), "met": self.met()})
    }
}

pub fn main(args: Args) -> ExitCode {
    if let Some(dir) = args.disk.clone() {
        return disk::run(
            &dir,
            args.disk_mib,
            args.load_mbps,
            args.sensor_mbps,
            args.json,
        );
    }
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("roverlog bench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool> {
    // The hour-long trace is a bench of the readers and verbs, not of the daemon: it runs
    // only when named, on its own.
    if args.only.iter().any(|s| s == FULL_SIZE) {
        if args.only.len() > 1 {
            bail!("--only {FULL_SIZE} runs alone (it drives no daemon)");
        }
        let work = make_work_dir(args.dir.as_deref())?;
        progress(&format!("working in {}", work.display()));
        let ok = full_size::run(&work, args.quick, args.json)?;
        if args.keep || !ok {
            progress(&format!("kept {}", work.display()));
        } else {
            let _ = std::fs::remove_dir_all(&work);
        }
        return Ok(ok);
    }
    if args.only.iter().any(|s| s == HOUR_TRACE) {
        if args.only.len() > 1 {
            bail!("--only {HOUR_TRACE} runs alone");
        }
        let work = make_work_dir(args.dir.as_deref())?;
        println!("{}", hour_trace::run(&work, args.quick)?.display());
        return Ok(true);
    }
    if args.only.iter().any(|s| s == SOAK) {
        if args.only.len() > 1 {
            bail!("--only {SOAK} runs alone");
        }
        let work = make_work_dir(args.dir.as_deref())?;
        progress(&format!(
            "working in {}; soak for {} min",
            work.display(),
            args.minutes
        ));
        let (report, ok) = soak::run(&work, args.minutes)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report).expect("json"));
        } else {
            soak::print(&report);
        }
        if args.keep || !ok {
            progress(&format!("kept {}", work.display()));
        } else {
            let _ = std::fs::remove_dir_all(&work);
        }
        return Ok(ok);
    }
    if args.only.iter().any(|s| s == "faults") {
        if args.only.len() > 1 {
            bail!("--only faults runs alone (it mounts its own disks)");
        }
        return faults::run(&args);
    }
    if args.only.iter().any(|s| s == "rosbag") {
        if args.only.len() > 1 {
            bail!("--only rosbag runs alone (it drives no daemon)");
        }
        return rosbag::run_bench(&args);
    }
    if args.only.iter().any(|s| s == "offload") {
        let work = make_work_dir(args.dir.as_deref())?;
        return Ok(roverlog_bench::offload::main(
            &work,
            args.quick,
            args.json,
            args.rounds,
        )?);
    }
    if args.only.iter().any(|s| s == "rig") {
        if args.only.len() > 1 {
            bail!("the rig scenario runs alone (--only rig): its report is its own");
        }
        return rig::run(&args);
    }
    let selected: Vec<&'static str> = if args.only.is_empty() {
        SCENARIOS.to_vec()
    } else {
        let mut v = Vec::new();
        for name in &args.only {
            match SCENARIOS.iter().find(|s| **s == name.as_str()) {
                Some(s) => v.push(*s),
                None => bail!(
                    "unknown scenario {name:?} (known: {}, rig)",
                    SCENARIOS.join(", ")
                ),
            }
        }
        v
    };
    if args.sensors == 0 {
        bail!("--sensors must be at least 1");
    }
    if !(1..=MAX_LARGE_FRAME).contains(&args.frame_bytes) {
        bail!(
            "--frame-bytes must be 1..={MAX_LARGE_FRAME}, got {}",
            args.frame_bytes
        );
    }
    let mut sizes = Sizes::new(args.quick);
    match args.rounds {
        Some(0) => bail!("--rounds must be at least 1"),
        Some(n) => sizes.rounds = n,
        None => {}
    }
    let work = make_work_dir(args.dir.as_deref())?;
    let fs = procfs::filesystem_of(&work);
    let load_before = load_average();
    progress(&format!(
        "working in {} ({})",
        work.display(),
        fs.as_ref().map_or("filesystem unknown".into(), |f| format!(
            "{} on {}, mounted at {}",
            f.fs_type,
            f.source,
            f.mount_point.display()
        ))
    ));

    let py = python_writer(args.python.as_deref());
    let mut rows = Vec::new();
    let mut memory = Vec::new();
    let mut checks = Vec::new();
    let mut exits = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut cfg = None;
    for &scenario in &selected {
        progress(&format!("scenario {scenario}"));
        // A fresh daemon and data root per scenario: its memory is then this load's alone
        // (the allocator keeps freed heap, so one daemon would carry the largest so far).
        let (c, cfg_path) = write_config(&work, scenario, args.daemon_config.as_deref())?;
        let mut daemon = DaemonChild::start(&c, &cfg_path, &work, scenario)?;
        let pid = daemon.child.id();
        let sampler = procfs::RssSampler::start(pid, Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(500));
        let idle = procfs::status_bytes(pid, "VmRSS").unwrap_or(0);
        let mut expected = BTreeMap::new();
        sampler.take_max();
        let r = run_scenario(scenario, &args, &sizes, &c, &work, &py, &mut expected);
        let during = sampler.take_max();
        // After the load: the flush and fsync timers have run, the queues are empty.
        std::thread::sleep(Duration::from_millis(1500));
        let after = procfs::status_bytes(pid, "VmRSS").unwrap_or(0);
        let hwm = procfs::status_bytes(pid, "VmHWM").unwrap_or(0);
        drop(sampler);
        match r {
            Ok((mut new_rows, budget)) => {
                rows.append(&mut new_rows);
                memory.push(Memory {
                    scenario,
                    idle,
                    during,
                    after,
                    hwm,
                    budget,
                });
            }
            Err(e) => {
                progress(&format!("scenario {scenario} failed: {e:#}"));
                failures.push(format!("{scenario}: {e:#}"));
            }
        }
        let exit = daemon.stop()?;
        if exit != Some(0) {
            failures.push(format!(
                "{scenario}: daemon exit status {exit:?} after SIGTERM (want 0); see {}",
                daemon.log.display()
            ));
        }
        exits.push(json!({"scenario": scenario, "exit": exit}));
        checks.extend(check_data(&daemon.trace_dir, &expected));
        cfg = Some(c);
    }
    let cfg = cfg.expect("at least one scenario");
    let data_ok = checks.iter().all(|c| c["ok"] == true);
    if !data_ok {
        failures.push("data check failed: not every sample sent is on disk intact".into());
    }
    let ok = failures.is_empty();

    let report = json!({
        "ok": ok,
        "quick": args.quick,
        "sensors": args.sensors,
        "dir": work,
        "filesystem": fs.as_ref().map(|f| json!({"type": f.fs_type, "source": f.source, "mount_point": f.mount_point})),
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "load_average": {"before": load_before, "after": load_average()},
        "daemon_config": {
            "queue_bytes": cfg.ingest.queue_bytes, "buffer_bytes": cfg.storage.buffer_bytes,
            "max_frame_bytes": cfg.ingest.max_frame_bytes, "fsync": serde_json::to_value(&cfg.document().fsync).ok(),
            "fsync_interval_ms": cfg.document().fsync_interval_ms, "fsync_bytes": cfg.document().fsync_bytes,
            "compress_threads": cfg.storage.compress_threads,
        },
        "scenarios": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
        "rss": memory.iter().map(Memory::to_json).collect::<Vec<_>>(),
        "daemon_exits": exits,
        "data_check": {"ok": data_ok, "sensors": checks},
        "failures": failures,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        print_table(&report, &rows, &memory);
    }
    if args.keep || !ok {
        progress(&format!("kept {}", work.display()));
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(ok)
}

fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn progress(msg: &str) {
    eprintln!("bench: {msg}");
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}
