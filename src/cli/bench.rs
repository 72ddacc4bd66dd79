//! `roverlog bench`: runs the real daemon as a child process, drives it with
//! [`roverlog::bench::load`], and prints its figures next to baselines measured in the same
//! run on the same directory, as ratios. The machine this runs on is shared and noisy, so
//! only ratios measured minutes apart mean anything; absolute figures are for the record.
//!
//! A run that loses data is a failure, not a figure: after SIGTERM (which must exit 0) every
//! sensor's files are checked with [`roverlog::format::check_sensor`] and must hold exactly
//! the samples sent.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use roverlog::bench::baselines::{self, Input, Leave};
use roverlog::bench::load::{self, LoadSpec, Workload};
use roverlog::bench::{procfs, Throughput};
use roverlog::daemon::events::EVENTS_DIR;
use roverlog::daemon::Config;
use roverlog::format::{check_sensor, Depth};

const SCENARIOS: [&str; 5] = ["large", "direct", "imu", "batched", "lzmaf"];
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
/// write()), lzmaf (256 KiB frames compressed, vs a 20 Hz lidar). The daemon's resident
/// memory is sampled throughout and compared with its configured budgets.
///
/// Exit codes: 0 every scenario ran and the data checks passed (targets may be missed: that
/// is reported, not an error); 1 a scenario failed, data was lost, or the daemon did not exit
/// 0; 2 bad arguments or the daemon could not be started.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Directory to work in (a fresh subdirectory is made inside). Default: ./target/bench-tmp
    /// when ./target exists, else the system temp dir. Its filesystem is what is measured.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Concurrent sensors in the imu and batched scenarios.
    #[arg(long, default_value_t = 4)]
    sensors: usize,
    /// Small sizes for a smoke test (seconds); the figures mean nothing.
    #[arg(long)]
    quick: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Run only these scenarios (comma-separated): large, direct, imu, batched, lzmaf.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Python with numpy for the upstream-style baseline. Default: scripts/py-env.sh's venv.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Keep the working directory (traces, config, daemon.log) afterwards.
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
    /// Alternating rounds (baseline, daemon) in the large, direct and imu scenarios; more
    /// rounds average out more noise. Default 3 (1 with --quick).
    #[arg(long)]
    rounds: Option<usize>,
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
    let selected: Vec<&'static str> = if args.only.is_empty() {
        SCENARIOS.to_vec()
    } else {
        let mut v = Vec::new();
        for name in &args.only {
            match SCENARIOS.iter().find(|s| **s == name.as_str()) {
                Some(s) => v.push(*s),
                None => bail!(
                    "unknown scenario {name:?} (known: {})",
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
            "queue_bytes": cfg.queue_bytes, "buffer_bytes": cfg.buffer_bytes,
            "max_frame_bytes": cfg.max_frame_bytes, "fsync": serde_json::to_value(&cfg.fsync).ok(),
            "fsync_interval_ms": cfg.fsync_interval_ms, "fsync_bytes": cfg.fsync_bytes,
            "compress_threads": cfg.compress_threads_or_auto(),
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

#[allow(clippy::too_many_arguments)]
fn run_scenario(
    scenario: &'static str,
    args: &Args,
    sizes: &Sizes,
    cfg: &Config,
    work: &Path,
    py: &std::result::Result<(PathBuf, PathBuf), String>,
    expected: &mut BTreeMap<String, u64>,
) -> Result<(Vec<Row>, u64)> {
    let ingest = &cfg.ingest_socket;
    // Channel files (ts + data channels, + the lzmaf index) each keep a write buffer.
    let mut files_open = 0u64;
    let n = args.sensors;
    let queue = cfg.queue_bytes;
    let buffers = cfg.buffer_bytes as u64;
    // Per live connection: its read buffer holds at least 64 KiB, or one whole frame.
    let read_buf = |frame: usize| (frame as u64 + 20).max(64 << 10);
    // Large frames are received into pooled buffers; the pool keeps up to FREE_MAX of them
    // free (released after a second without large frames).
    let pool = |frame: usize| {
        // A frame on the wire: `u32 len`, `f64 ts`, then the sample (the bench sends no seq).
        if frame + 12 >= roverlog::daemon::ingest::POOLED_FRAME {
            roverlog::daemon::bufpool::FREE_MAX as u64
        } else {
            0
        }
    };
    let drive = |spec: &LoadSpec, expected: &mut BTreeMap<String, u64>| -> Result<Throughput> {
        let report = load::drive(ingest, spec).with_context(|| format!("driving {scenario}"))?;
        for s in &report.sensors {
            if s.durable < s.resumed_from + s.samples {
                bail!("{}: durable {} < sent {}", s.sensor, s.durable, s.samples);
            }
            expected.insert(s.sensor.clone(), s.resumed_from + s.samples);
        }
        Ok(report.total)
    };
    let (rows, budget) = match scenario {
        "large" | "direct" => {
            let direct = scenario == "direct";
            let frame = args.frame_bytes;
            let frames = (sizes.large_frames * LARGE_FRAME as u64 / frame as u64).max(1);
            let total = sizes.large_sensors as u64 * frames * frame as u64;
            let mut spec = LoadSpec::new(
                sizes.large_sensors,
                Workload::Large { bytes: frame },
                frames,
            );
            spec.prefix = scenario.into();
            let (mut dd, mut zeros, mut other, mut ours) =
                (Ok(Vec::new()), Ok(Vec::new()), Ok(Vec::new()), Vec::new());
            let mib = total >> 20;
            // dd copies random bytes from memory, as incompressible as the daemon's frames:
            // this VM's disk stored dd's zeros far faster than any real data (BENCHMARKS.md).
            // The zeros are timed too, for comparison.
            let source = RemoveOnDrop(baselines::random_source(mib).context("the dd source")?);
            let random = Input::File(&source.0);
            // The baselines' files stay until the scenario ends, as the daemon's traces do: a
            // disk that slows down as recently written data piles up (this VM's does) then
            // sees the same from every side.
            let kept = work.join(format!("kept-{scenario}"));
            // Who writes when rotates from round to round: with every file kept, each writer
            // meets the disk after the others' writes equally often (over as many rounds as
            // there are writers), instead of the daemon always writing last.
            let steps = if direct { 3 } else { 4 };
            for round in 0..sizes.rounds {
                // One directory per baseline (the daemon writes to its data root).
                let dirs: Vec<PathBuf> = (0..steps - 1)
                    .map(|i| kept.join(format!("{round}.{i}")))
                    .collect();
                for d in &dirs {
                    std::fs::create_dir_all(d).with_context(|| d.display().to_string())?;
                }
                let leave = Leave::Kept;
                for step in 0..steps {
                    match ((step + round) % steps, direct) {
                        // Target: dd oflag=direct; dd through the page cache for comparison.
                        (0, true) => push_round(
                            &mut dd,
                            baselines::dd_direct(&dirs[0], mib, random, leave)
                                .map_err(|e| e.to_string()),
                        ),
                        (1, true) => push_round(
                            &mut other,
                            baselines::dd_fdatasync(&dirs[1], mib, random, leave)
                                .map_err(|e| e.to_string()),
                        ),
                        (0, false) => push_round(
                            &mut dd,
                            baselines::dd_fdatasync(&dirs[0], mib, random, leave)
                                .map_err(|e| e.to_string()),
                        ),
                        (1, false) => push_round(
                            &mut zeros,
                            baselines::dd_fdatasync(&dirs[1], mib, Input::Zeros, leave)
                                .map_err(|e| e.to_string()),
                        ),
                        // The same bytes through a socket into a file with no format: the
                        // copies dd does not make.
                        (2, false) => push_round(
                            &mut other,
                            concurrent_sinks(
                                &dirs[2],
                                sizes.large_sensors,
                                frames,
                                frame,
                                Some(leave),
                            ),
                        ),
                        _ => ours.push(drive(&spec, expected)?),
                    }
                }
            }
            drop(source);
            let _ = std::fs::remove_dir_all(&kept);
            files_open += 2 * sizes.large_sensors as u64;
            let target = if direct { 0.85 } else { 1.0 };
            let mut rows = vec![Row::new(
                scenario,
                &ours,
                Some(dd),
                Unit::MbPerSec,
                Some(target),
            )];
            if !direct {
                rows.push(Row::new(scenario, &ours, Some(zeros), Unit::MbPerSec, None));
            }
            rows.push(Row::new(scenario, &ours, Some(other), Unit::MbPerSec, None));
            let live = sizes.large_sensors as u64;
            // A direct channel's staging buffer is at least 1 MiB instead of buffer_bytes.
            let staging = if direct {
                let b = cfg.buffer_bytes as u64;
                live * (b.max(roverlog::format::direct::MIN_DIRECT_BUFFER as u64) - b)
            } else {
                0
            };
            (
                rows,
                live * (queue + read_buf(frame)) + staging + pool(frame),
            )
        }
        "imu" => {
            let mut spec = LoadSpec::new(n, Workload::Imu, sizes.imu_samples);
            spec.prefix = "imu".into();
            let (mut sink, mut python, mut ours) = (Ok(Vec::new()), Ok(Vec::new()), Vec::new());
            let (mut ceiling, mut tokio_ceiling) = (Ok(Vec::new()), Ok(Vec::new()));
            for _ in 0..sizes.rounds {
                push_round(
                    &mut sink,
                    concurrent_sinks(work, n, sizes.imu_samples, 44, Some(Leave::Removed)),
                );
                push_round(
                    &mut ceiling,
                    concurrent_sinks(work, n, sizes.imu_samples, 44, None),
                );
                push_round(
                    &mut tokio_ceiling,
                    baselines::tokio_discard(n, sizes.imu_samples, 44).map_err(|e| e.to_string()),
                );
                let p = match py {
                    Ok((py, script)) => python_imu(py, script, work, n, sizes.imu_samples),
                    Err(e) => Err(e.clone()),
                };
                push_round(&mut python, p);
                ours.push(drive(&spec, expected)?);
            }
            files_open += 3 * n as u64;
            let mut rows = vec![
                Row::new(scenario, &ours, Some(sink), Unit::SamplesPerSec, Some(0.8)),
                Row::new(
                    scenario,
                    &ours,
                    Some(python.clone()),
                    Unit::SamplesPerSec,
                    Some(6.0),
                ),
            ];
            // The socket path alone, with a reader that does nothing: how close the daemon
            // is to it, and the most any server could be against the Python writer here.
            for (what, r) in [("threads", &ceiling), ("tokio tasks", &tokio_ceiling)] {
                if let Err(e) = r {
                    eprintln!("bench: imu: the no-work readers ({what}) failed, row left out: {e}");
                }
            }
            if let Ok(c) = &ceiling {
                rows.push(Row::new(
                    scenario,
                    c,
                    Some(python.clone()),
                    Unit::SamplesPerSec,
                    None,
                ));
            }
            // The same with the readers as tokio tasks, as the daemon's connections are.
            if let Ok(c) = &tokio_ceiling {
                rows.push(Row::new(
                    scenario,
                    c,
                    Some(python),
                    Unit::SamplesPerSec,
                    None,
                ));
            }
            rows.push(Row::new(
                scenario,
                &ours,
                Some(ceiling),
                Unit::SamplesPerSec,
                None,
            ));
            (rows, n as u64 * (queue + read_buf(0)))
        }
        "batched" => {
            let mut spec = LoadSpec::new(
                n,
                Workload::ImuBatched {
                    per_write: PER_WRITE,
                },
                sizes.batched_samples,
            );
            spec.prefix = "batched".into();
            let ours = drive(&spec, expected)?;
            files_open += 3 * n as u64;
            let rows = vec![Row::new(
                scenario,
                &[ours],
                None,
                Unit::SamplesPerSec,
                Some(1_000_000.0),
            )];
            (rows, n as u64 * (queue + read_buf(0)))
        }
        "lzmaf" => {
            let mut spec = LoadSpec::new(
                1,
                Workload::Lidar { bytes: LIDAR_FRAME },
                sizes.lidar_frames,
            );
            spec.prefix = "lidar".into();
            let mut ours = drive(&spec, expected)?;
            ours.name = format!(
                "{} lzmaf, {} compress threads",
                ours.name,
                cfg.compress_threads_or_auto()
            );
            files_open += 3;
            // What a lidar needs: LIDAR_HZ frames a second, measured as a "throughput".
            let need = Throughput {
                name: format!("lidar at {LIDAR_HZ} Hz (requirement)"),
                bytes: (LIDAR_FRAME as f64 * LIDAR_HZ) as u64,
                samples: LIDAR_HZ as u64,
                elapsed: Duration::from_secs(1),
            };
            let rows = vec![Row::new(
                scenario,
                &[ours],
                Some(Ok(vec![need])),
                Unit::SamplesPerSec,
                Some(1.0),
            )];
            // Compression in flight: a chunk of 4 x compress_threads frames' outputs.
            let chunk = 4 * cfg.compress_threads_or_auto() as u64 * LIDAR_FRAME as u64;
            (
                rows,
                queue + read_buf(LIDAR_FRAME) + chunk + pool(LIDAR_FRAME),
            )
        }
        other => unreachable!("scenario {other}"),
    };
    Ok((rows, budget + files_open * buffers))
}

/// A fresh directory under `base` (or the default place).
fn make_work_dir(base: Option<&Path>) -> Result<PathBuf> {
    let base = match base {
        Some(b) => b.to_path_buf(),
        None if Path::new("target").is_dir() => PathBuf::from("target/bench-tmp"),
        None => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let dir = base.join(format!("roverlog-bench-{}-{stamp}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    dir.canonicalize()
        .with_context(|| format!("resolving {}", dir.display()))
}

/// The daemon's config: the defaults, except where its files and sockets go and the lidar
/// sensor's channel stored as `lzmaf`. A long shutdown deadline: SIGTERM must not lose data
/// because this machine is slow.
fn write_config(work: &Path, scenario: &str, extra: Option<&str>) -> Result<(Config, PathBuf)> {
    let mut v = json!({
        "_doc": "written by roverlog bench",
        "data_root": work.join(format!("data-{scenario}")),
        "ingest_socket": work.join("run/ingest.sock"),
        "control_socket": work.join("run/control.sock"),
        "formats": {"lidar0": {"rng": "lzmaf"}},
        "shutdown_deadline_ms": 60000,
    });
    if scenario == "direct" {
        v["direct_io"] = json!(true);
    }
    if let Some(extra) = extra {
        let extra: Value = serde_json::from_str(extra).context("--daemon-config")?;
        let Some(keys) = extra.as_object() else {
            bail!("--daemon-config: want a JSON object, got {extra}");
        };
        for (k, x) in keys {
            v[k] = x.clone();
        }
    }
    let path = work.join(format!("roverlog-{scenario}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&v)?)
        .with_context(|| format!("writing {}", path.display()))?;
    let cfg = Config::load(&path).map_err(|e| anyhow!("{e}"))?;
    Ok((cfg, path))
}

/// `roverlog daemon --config <cfg>`, run from this executable.
struct DaemonChild {
    child: Child,
    log: PathBuf,
    trace_dir: PathBuf,
}

impl DaemonChild {
    fn start(cfg: &Config, cfg_path: &Path, work: &Path, scenario: &str) -> Result<DaemonChild> {
        let exe = std::env::current_exe().context("finding this executable")?;
        let log = work.join(format!("daemon-{scenario}.log"));
        let log_file = std::fs::File::create(&log)?;
        let child = Command::new(exe)
            .args(["daemon", "--config"])
            .arg(cfg_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .context("starting roverlog daemon")?;
        let mut d = DaemonChild {
            child,
            log,
            trace_dir: PathBuf::new(),
        };
        let t0 = Instant::now();
        loop {
            // Ready: the ingest socket accepts, and the control socket says it is recording.
            if UnixStream::connect(&cfg.ingest_socket).is_ok() {
                if let Ok(st) = ctl(&cfg.control_socket, json!({"cmd": "status"})) {
                    if let Some(dir) = st["trace_dir"].as_str() {
                        d.trace_dir = PathBuf::from(dir);
                        return Ok(d);
                    }
                }
            }
            if let Some(status) = d.child.try_wait()? {
                bail!(
                    "the daemon exited at start ({status}); its log:\n{}",
                    std::fs::read_to_string(&d.log).unwrap_or_default()
                );
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = d.child.kill();
                bail!("the daemon did not become ready within 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then wait (2 minutes at most); the exit code, or `None` when it was killed.
    fn stop(&mut self) -> Result<Option<i32>> {
        // SAFETY: signalling our own child, which has not been reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait()? {
                return Ok(s.code());
            }
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DaemonChild {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One control command and its reply.
fn ctl(socket: &Path, cmd: Value) -> Result<Value> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut l = serde_json::to_vec(&cmd)?;
    l.push(b'\n');
    s.write_all(&l)?;
    let mut reply = String::new();
    BufReader::new(s).read_line(&mut reply)?;
    Ok(serde_json::from_str(&reply)?)
}

/// `n` socket sinks at once (one connection and thread each, in their own directories), as
/// the daemon gets `n` sensors: total records over the slowest one's time.
/// A file removed when this goes out of scope, also on an early error (the dd source lives
/// in memory, outside the work directory).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// With `sink` `None` the servers only count what they read ([`baselines::socket_discard`]);
/// otherwise they write it to a file left as `sink` says.
fn concurrent_sinks(
    work: &Path,
    n: usize,
    records: u64,
    bytes: usize,
    sink: Option<Leave>,
) -> std::result::Result<Throughput, String> {
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let dir = work.join(format!("sink{i}"));
            std::thread::spawn(move || {
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                let r = match sink {
                    Some(leave) => baselines::socket_sink(&dir, records, bytes, leave),
                    None => baselines::socket_discard(&dir, records, bytes),
                };
                let r = r.map_err(|e| e.to_string());
                let _ = std::fs::remove_dir(&dir);
                r
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("sink thread"))
        .collect::<std::result::Result<_, _>>()?;
    let name = results.first().map_or(String::new(), |t| t.name.clone());
    Ok(aggregate(format!("{n} x {name}"), &results))
}

fn aggregate(name: String, parts: &[Throughput]) -> Throughput {
    Throughput {
        name,
        bytes: parts.iter().map(|t| t.bytes).sum(),
        samples: parts.iter().map(|t| t.samples).sum(),
        elapsed: parts.iter().map(|t| t.elapsed).max().unwrap_or_default(),
    }
}

/// The Python interpreter and `scripts/bench/python_writer.py`, or why they are missing.
fn python_writer(python: Option<&Path>) -> std::result::Result<(PathBuf, PathBuf), String> {
    let script = repo_file("scripts/bench/python_writer.py")
        .ok_or("scripts/bench/python_writer.py not found (run from the repository)")?;
    let py = match python {
        Some(p) => p.to_path_buf(),
        None => {
            let env = repo_file("scripts/py-env.sh").ok_or("scripts/py-env.sh not found")?;
            let out = Command::new("bash")
                .arg(env)
                .output()
                .map_err(|e| format!("running scripts/py-env.sh: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "scripts/py-env.sh failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    Ok((py, script))
}

/// `rel` under the current directory or any ancestor of this executable (target/release/..).
fn repo_file(rel: &str) -> Option<PathBuf> {
    let here = Path::new(rel);
    if here.is_file() {
        return Some(here.to_path_buf());
    }
    let exe = std::env::current_exe().ok()?;
    exe.ancestors().map(|a| a.join(rel)).find(|p| p.is_file())
}

/// `n` Python writer processes at once (one per sensor, as upstream runs one collector per
/// sensor), each `samples` IMU samples with a final fsync: total samples over the slowest
/// one's own measured time (interpreter start-up excluded).
fn python_imu(
    py: &Path,
    script: &Path,
    work: &Path,
    n: usize,
    samples: u64,
) -> std::result::Result<Throughput, String> {
    let dir = work.join("python");
    let children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(py)
                .arg(script)
                .arg("--dir")
                .arg(&dir)
                .args(["--workload", "imu", "--fsync", "--samples"])
                .arg(samples.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting {}: {e}", py.display()))
        })
        .collect::<std::result::Result<_, _>>()?;
    let mut parts = Vec::new();
    for c in children {
        let out = c.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "python writer failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or_default();
        let v: Value = serde_json::from_str(last)
            .map_err(|e| format!("python writer output {last:?}: {e}"))?;
        let num = |k: &str| v[k].as_f64().ok_or(format!("python writer: no {k:?}"));
        parts.push(Throughput {
            name: String::new(),
            bytes: num("bytes")? as u64,
            samples: num("samples")? as u64,
            elapsed: Duration::from_secs_f64(num("seconds")?),
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(aggregate(format!("{n} x python writer imu +fsync"), &parts))
}

/// Checks every sensor of the trace: sound, and holding exactly the samples sent.
fn check_data(trace: &Path, expected: &BTreeMap<String, u64>) -> Vec<Value> {
    let mut out = Vec::new();
    for (sensor, &want) in expected {
        let dir = trace.join(sensor);
        let v = match check_sensor(&dir, Depth::Deep) {
            Ok(c) => {
                let have = c.consistent_len();
                let every = c.channels.iter().all(|ch| ch.complete == want);
                let problems = c.all_problems();
                json!({"sensor": sensor, "sent": want, "on_disk": have,
                       "ok": c.is_ok() && have == want && every, "problems": problems})
            }
            Err(e) => json!({"sensor": sensor, "sent": want, "ok": false,
                             "problems": [e.to_string()]}),
        };
        out.push(v);
    }
    // Nothing else should be there.
    if let Ok(entries) = std::fs::read_dir(trace) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() && name != EVENTS_DIR && !expected.contains_key(&name) {
                out.push(json!({"sensor": name, "ok": false,
                                "problems": ["a sensor the bench did not send"]}));
            }
        }
    }
    out
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

fn print_table(report: &Value, rows: &[Row], memory: &[Memory]) {
    let fs = &report["filesystem"];
    println!(
        "roverlog bench{}: {} on {} {} ({}), {} CPUs, load average {} -> {}",
        if report["quick"] == true {
            " --quick"
        } else {
            ""
        },
        report["dir"].as_str().unwrap_or("?"),
        fs["type"].as_str().unwrap_or("?"),
        fs["source"].as_str().unwrap_or("?"),
        fs["mount_point"].as_str().unwrap_or("?"),
        report["cpus"],
        report["load_average"]["before"].as_str().unwrap_or("?"),
        report["load_average"]["after"].as_str().unwrap_or("?"),
    );
    println!("daemon config: {}", report["daemon_config"]);
    println!();
    println!("| scenario | ours | | baseline | | ours / baseline (per round) | target | met |");
    println!("| --- | --- | ---: | --- | ---: | ---: | --- | --- |");
    let fig = |u: Unit, t: &Throughput| format!("{:.1} {}", u.of(t), u.label());
    for r in rows {
        let (bname, bfig) = match &r.baseline {
            None => ("-".to_string(), String::new()),
            Some(Ok(b)) => (b.name.clone(), fig(r.unit, b)),
            Some(Err(e)) => (format!("unavailable: {e}"), String::new()),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.ours.name,
            fig(r.unit, &r.ours),
            bname,
            bfig,
            r.ratio().map_or("-".into(), |x| {
                let each: Vec<String> = r.rounds.iter().map(|x| format!("{x:.2}")).collect();
                if each.is_empty() {
                    format!("{x:.2}x")
                } else {
                    format!("{x:.2}x ({})", each.join(", "))
                }
            }),
            r.target_text(),
            if r.target.is_none() {
                "-"
            } else {
                yes_no(r.met())
            },
        );
    }
    println!();
    println!("Daemon memory, a fresh daemon per scenario (limit = budget + idle RSS):");
    println!();
    println!("| scenario | idle RSS | max RSS sampled | VmHWM | RSS after | budget (queues + read + write buffers + pool) | limit | met |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for m in memory {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            m.scenario,
            mib(m.idle),
            mib(m.during),
            mib(m.hwm),
            mib(m.after),
            mib(m.budget),
            mib(m.limit()),
            yes_no(Some(m.met())),
        );
    }
    println!();
    let checks = report["data_check"]["sensors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let total: u64 = checks.iter().filter_map(|c| c["sent"].as_u64()).sum();
    println!(
        "data check: {} ({} sensors, {} samples sent; daemon exits {})",
        if report["data_check"]["ok"] == true {
            "every sample on disk, traces sound"
        } else {
            "FAILED"
        },
        checks.len(),
        total,
        report["daemon_exits"]
    );
    for c in checks.iter().filter(|c| c["ok"] != true) {
        println!("  {c}");
    }
    for f in report["failures"].as_array().into_iter().flatten() {
        println!("FAILURE: {}", f.as_str().unwrap_or_default());
    }
}

fn yes_no(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "?",
    }
}
