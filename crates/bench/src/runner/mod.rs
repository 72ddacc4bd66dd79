//! `roverlog bench`: runs the real daemon as a child process, drives it with
//! [`crate::load`], and prints its figures next to baselines measured in the same
//! run on the same directory, as ratios. The machine this runs on is shared and noisy, so
//! only ratios measured minutes apart mean anything; absolute figures are for the record.
//!
//! A run that loses data is a failure, not a figure: after SIGTERM (which must exit 0) every
//! sensor's files are checked with [`roverlog_core::format::check_sensor`] and must hold exactly
//! the samples sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::baselines::{self, Input, Leave};
use crate::load::{self, LoadSpec, Workload};
use crate::{procfs, Throughput};
use roverlog_core::format::{check_sensor, Depth};
use roverlog_daemon::events::EVENTS_DIR;
use roverlog_daemon::Config;

mod baseline_error;
mod camera;
mod child;
mod dashboard;
mod disk;
pub mod error;
mod faults;
mod foxglove;
mod full_size;
mod hour_trace;
mod offload;
mod peers;
mod report;
pub mod rig;
mod rosbag;
mod scenario;
mod soak;
mod table;
mod verb_floor;

pub use baseline_error::BaselineError;
pub use error::RunError;
use error::{Result, UsageError};
use scenario::{check_data, python_writer, run_scenario, Ctx, PyWriter};
use table::{Scenario, ALONE, SCENARIOS};

use child::{make_work_dir, write_config, DaemonChild, RemoveOnDrop};
use report::print_table;

/// Bytes of one frame in the large-frame scenario.
pub const LARGE_FRAME: usize = 4 << 20;
/// Largest `--frame-bytes` (the daemon's default `max_frame_bytes` less the frame header).
const MAX_LARGE_FRAME: usize = (32 << 20) - 64;
/// Bytes of one lidar-like frame (u2 128 x 1024) in the `lzmaf` scenario, and the rate it must
/// keep up with.
const LIDAR_FRAME: usize = 256 << 10;
const LIDAR_HZ: f64 = 20.0;
/// IMU frames per `write()` in the batched scenario.
const PER_WRITE: usize = 256;

/// What `roverlog bench` was asked for: its command line, parsed by the binary (whose
/// `bench --help` documents each option; the fields carry the same names).
pub struct Options {
    /// Directory to work in (a fresh subdirectory is made inside); default ./target/bench-tmp
    /// when ./target exists, else the system temp dir.
    pub dir: Option<PathBuf>,
    /// Measure this directory's disk instead (write and fsync latency, throughput, advice).
    pub disk: Option<PathBuf>,
    /// The sensor load for `disk`'s advice, all sensors together, MB/s.
    pub load_mbps: f64,
    /// The busiest sensor's share of `load_mbps`, MB/s (default: all of it).
    pub sensor_mbps: Option<f64>,
    /// Bytes written per block size by `disk`, MiB.
    pub disk_mib: u64,
    /// Concurrent sensors in the imu and batched scenarios.
    pub sensors: usize,
    /// Small sizes for a smoke test; the figures mean nothing.
    pub quick: bool,
    /// Print one JSON object instead of the table.
    pub json: bool,
    /// Run only these scenarios (the names of `table.rs`'s rows); empty: every daemon scenario.
    pub only: Vec<String>,
    /// How long `soak` runs, minutes.
    pub minutes: f64,
    /// rig: seconds of the rig to record.
    pub rig_seconds: Option<f64>,
    /// rig: a Python where upstream's `import roverd` works.
    pub upstream_python: Option<PathBuf>,
    /// Python with numpy for the upstream-style baseline.
    pub python: Option<PathBuf>,
    /// Keep the working directory afterwards.
    pub keep: bool,
    /// Bytes per frame in the large and direct scenarios.
    pub frame_bytes: usize,
    /// Daemon config keys to set on top of the bench's (a JSON object).
    pub daemon_config: Option<String>,
    /// Alternating rounds (baseline, daemon).
    pub rounds: Option<usize>,
    /// rosbag: lidar frames (128 x 2048) in the trace it converts.
    pub lidar_frames: usize,
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
    baseline: Option<std::result::Result<Throughput, BaselineError>>,
    unit: Unit,
    /// `ours / baseline >= target`, or with no baseline `ours >= target` in `unit`; `None`
    /// for a row shown only to explain another.
    target: Option<f64>,
    /// The ratio of each round alone (when there were several): the noise, in view.
    rounds: Vec<f64>,
    /// Each round's figures in `unit`, ours then the baseline's (when there were several).
    round_figures: Vec<(f64, f64)>,
}

type Rounds = std::result::Result<Vec<Throughput>, BaselineError>;

/// Adds one round's baseline figure; the first failure is kept.
fn push_round<E: Into<BaselineError>>(acc: &mut Rounds, r: std::result::Result<Throughput, E>) {
    if let Ok(v) = acc {
        match r {
            Ok(t) => v.push(t),
            Err(e) => *acc = Err(e.into()),
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
                Some(Err(e)) => json!({"error": e.to_string()}),
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

/// Every scenario `--only` can name, with what it measures: the daemon scenarios (run by
/// default) first, then those that run alone.
pub fn catalogue() -> Vec<(&'static str, &'static str)> {
    let daemon = SCENARIOS.iter().map(|s| (s.name, s.measures));
    daemon
        .chain(ALONE.iter().map(|s| (s.name, s.measures)))
        .collect()
}

/// Runs `roverlog bench` as asked: `Ok(true)` every scenario ran and the data checks passed
/// (targets may be missed: that is reported, not an error), `Ok(false)` a scenario failed or
/// lost data (with `--disk`: the disk does not hold the load), `Err` bad arguments or a
/// scenario that could not run. The binary maps these to its exit codes 0, 1 and 2 (its
/// `bench --help` says more), printing the error as `roverlog bench: error: {error}`.
pub fn main(args: Options) -> Result<bool> {
    if let Some(dir) = args.disk.as_deref() {
        return disk::run(
            dir,
            args.disk_mib,
            args.load_mbps,
            args.sensor_mbps,
            args.json,
        );
    }
    run(&args)
}

/// Runs the one scenario named that runs alone, or the daemon scenarios selected.
fn run(args: &Options) -> Result<bool> {
    for alone in ALONE {
        if args.only.iter().any(|s| s == alone.name) {
            if args.only.len() > 1 {
                return Err(UsageError::NotAlone {
                    scenario: alone.name,
                    usage: alone.alone,
                }
                .into());
            }
            return (alone.run)(args);
        }
    }
    let selected = select(&args.only)?;
    let sizes = check_settings(args)?;
    run_daemon_scenarios(args, &selected, &sizes)
}

/// The daemon scenarios `--only` names (all of them when it names none), in table order of
/// the names given.
fn select(only: &[String]) -> Result<Vec<&'static Scenario>> {
    if only.is_empty() {
        return Ok(SCENARIOS.iter().collect());
    }
    let mut v = Vec::new();
    for name in only {
        match SCENARIOS.iter().find(|s| s.name == name.as_str()) {
            Some(s) => v.push(s),
            None => {
                return Err(UsageError::UnknownScenario {
                    name: name.clone(),
                    known: SCENARIOS.iter().map(|s| s.name).collect(),
                }
                .into())
            }
        }
    }
    Ok(v)
}

/// The daemon scenarios' settings checked, and their sizes.
fn check_settings(args: &Options) -> Result<Sizes> {
    if args.sensors == 0 {
        return Err(UsageError::Zero {
            option: "--sensors",
        }
        .into());
    }
    if !(1..=MAX_LARGE_FRAME).contains(&args.frame_bytes) {
        return Err(UsageError::FrameBytes {
            got: args.frame_bytes,
            max: MAX_LARGE_FRAME,
        }
        .into());
    }
    let mut sizes = Sizes::new(args.quick);
    match args.rounds {
        Some(0) => return Err(UsageError::Zero { option: "--rounds" }.into()),
        Some(n) => sizes.rounds = n,
        None => {}
    }
    Ok(sizes)
}

/// What the daemon scenarios gathered, for the report.
#[derive(Default)]
struct Gathered {
    rows: Vec<Row>,
    memory: Vec<Memory>,
    checks: Vec<Value>,
    exits: Vec<Value>,
    failures: Vec<String>,
    cfg: Option<Config>,
}

/// Runs each selected scenario against a fresh daemon, then reports them together.
fn run_daemon_scenarios(args: &Options, selected: &[&Scenario], sizes: &Sizes) -> Result<bool> {
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
    let mut g = Gathered::default();
    for scenario in selected {
        one_daemon_scenario(args, scenario, sizes, &work, &py, &mut g)?;
    }
    let cfg = g.cfg.take().expect("at least one scenario");
    let data_ok = g.checks.iter().all(|c| c["ok"] == true);
    if !data_ok {
        g.failures
            .push("data check failed: not every sample sent is on disk intact".into());
    }
    let ok = g.failures.is_empty();

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
        "scenarios": g.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
        "rss": g.memory.iter().map(Memory::to_json).collect::<Vec<_>>(),
        "daemon_exits": g.exits,
        "data_check": {"ok": data_ok, "sensors": g.checks},
        "failures": g.failures,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        print_table(&report, &g.rows, &g.memory);
    }
    finish(&work, args.keep, ok);
    Ok(ok)
}

/// One daemon scenario: a fresh daemon and data root (its memory is then this load's alone:
/// the allocator keeps freed heap, so one daemon would carry the largest so far), its memory
/// sampled while the load runs, its exit after SIGTERM and its data checked.
fn one_daemon_scenario(
    args: &Options,
    scenario: &Scenario,
    sizes: &Sizes,
    work: &Path,
    py: &PyWriter,
    g: &mut Gathered,
) -> Result<()> {
    let name = scenario.name;
    progress(&format!("scenario {name}"));
    let (c, cfg_path) = write_config(work, name, args.daemon_config.as_deref())?;
    let mut daemon = DaemonChild::start(&c, &cfg_path, work, name)?;
    let pid = daemon.child.id();
    let sampler = procfs::RssSampler::start(pid, Duration::from_millis(10));
    std::thread::sleep(Duration::from_millis(500));
    let idle = procfs::status_bytes(pid, "VmRSS").unwrap_or(0);
    let mut expected = BTreeMap::new();
    sampler.take_max();
    let ctx = Ctx {
        scenario: name,
        args,
        sizes,
        cfg: &c,
        work,
        py,
        expected: &mut expected,
    };
    let r = run_scenario(scenario, ctx);
    let during = sampler.take_max();
    // After the load: the flush and fsync timers have run, the queues are empty.
    std::thread::sleep(Duration::from_millis(1500));
    let after = procfs::status_bytes(pid, "VmRSS").unwrap_or(0);
    let hwm = procfs::status_bytes(pid, "VmHWM").unwrap_or(0);
    drop(sampler);
    match r {
        Ok((mut new_rows, budget)) => {
            g.rows.append(&mut new_rows);
            g.memory.push(Memory {
                scenario: name,
                idle,
                during,
                after,
                hwm,
                budget,
            });
        }
        Err(e) => {
            progress(&format!("scenario {name} failed: {e}"));
            g.failures.push(format!("{name}: {e}"));
        }
    }
    let exit = daemon.stop()?;
    if exit != Some(0) {
        g.failures.push(format!(
            "{name}: daemon exit status {exit:?} after SIGTERM (want 0); see {}",
            daemon.log.display()
        ));
    }
    g.exits.push(json!({"scenario": name, "exit": exit}));
    g.checks.extend(check_data(&daemon.trace_dir, &expected));
    g.cfg = Some(c);
    Ok(())
}

/// Removes the working directory unless it is to be kept (`--keep`, or a failed run).
fn finish(work: &Path, keep: bool, ok: bool) {
    if keep || !ok {
        progress(&format!("kept {}", work.display()));
    } else {
        let _ = std::fs::remove_dir_all(work);
    }
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
