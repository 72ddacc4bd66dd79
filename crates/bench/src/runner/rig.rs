//! `roverlog bench --only rig`: the red-rover rig ([`crate::rig`]) recorded through
//! the real daemon, one driver process per sensor pushing as fast as the daemon takes them,
//! and in the same run the same samples written by upstream roverd's Python writers (or, when
//! no upstream install is given, by `scripts/bench/python_writer.py`'s stdlib imitation).
//!
//! Figures: rig seconds recorded per wall second ("x real time", the slowest stream decides),
//! the daemon's CPU seconds (from `/proc/<pid>/stat`, go to the last durable reply) per rig
//! second (with the system's part and the minor page faults), its peak RSS (`VmHWM`), drops
//! (`status` and `events.jsonl`), the lidar samples it stored uncompressed because compression
//! fell behind (`lzmaf_stored`: pushed as fast as it takes them, the lidar's queue fills, so
//! the fallback decides part of the figure), and the writers' x real time and CPU seconds
//! (their own `getrusage`) per rig second.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::procfs;
use crate::rig::frames::{self, PoolSummary, MANIFEST};
use crate::rig::push::Session;
use crate::rig::{Dims, Stream, STREAMS};

use super::child::{ctl, events_drops, make_work_dir, sensors_sum, write_config, DaemonChild};
use super::error::{current_exe, CommandError, Result, ScenarioError, UsageError};
use super::peers::{run_together, Finished};
use super::scenario::{check_data, python_writer, repo_file};
use super::BaselineError;
use super::{finish, load_average, mib, progress, Options};

/// The environment variable naming upstream's Python, when `--upstream-python` is not given.
pub(super) const UPSTREAM_ENV: &str = "ROVERLOG_UPSTREAM_PYTHON";

/// `roverlog bench-rig-driver`: one rig stream into a running daemon (started by `bench --only
/// rig`, one process per stream). Prints `ready` once connected, waits for a line on stdin,
/// sends, and prints one JSON line with what it did.
pub struct Driver {
    /// The daemon's ingest socket.
    pub socket: PathBuf,
    /// camera, lidar, radar or imu.
    pub stream: String,
    /// The frames directory `bench` made (holding rig.json).
    pub frames: PathBuf,
    /// Rig seconds to send.
    pub seconds: f64,
    /// The first sample's timestamp, epoch seconds.
    pub t0: f64,
    /// The frames are the tiny ones.
    pub tiny: bool,
    /// The trace directory, for the collector's sidecar files (`lidar.json`).
    pub trace_dir: Option<PathBuf>,
}

/// Runs one rig stream as asked; the binary prints an error as `roverlog bench-rig-driver
/// STREAM: error: ...` and exits 1 (which `bench --only rig` reports with the driver's log).
pub fn driver_main(a: Driver) -> Result<()> {
    drive(&a)
}

fn drive(a: &Driver) -> Result<()> {
    let Some(stream) = Stream::parse(&a.stream) else {
        return Err(UsageError::UnknownStream {
            stream: a.stream.clone(),
        }
        .into());
    };
    let dims = Dims::of(a.tiny);
    let session = Session::connect(&a.socket, stream, &dims, &a.frames, a.trace_dir.as_deref())?;
    println!("ready");
    let mut go = String::new();
    std::io::stdin()
        .read_line(&mut go)
        .map_err(ScenarioError::Go)?;
    let r = session.run(stream.samples(a.seconds), a.t0)?;
    println!(
        "{}",
        json!({"sensor": r.sensor, "resumed_from": r.resumed_from, "samples": r.samples,
               "bytes": r.bytes, "durable": r.durable, "seconds": r.elapsed.as_secs_f64(),
               "cpu_seconds": r.cpu.as_secs_f64()})
    );
    Ok(())
}

/// One side's runs: per round, per stream its result.
struct Side {
    label: String,
    rounds: Vec<Vec<Finished>>,
}

impl Side {
    /// One round's wall time: the slowest stream decides.
    fn round_wall(round: &[Finished]) -> f64 {
        round
            .iter()
            .map(|f| f.after)
            .max()
            .unwrap_or_default()
            .as_secs_f64()
    }

    /// Rig seconds per wall second over every round.
    fn x_real_time(&self, seconds: f64) -> f64 {
        let wall: f64 = self.rounds.iter().map(|r| Side::round_wall(r)).sum();
        seconds * self.rounds.len() as f64 / wall.max(1e-9)
    }

    fn own_cpu_of(round: &[Finished]) -> f64 {
        round
            .iter()
            .map(|f| f.result["cpu_seconds"].as_f64().unwrap_or(0.0))
            .sum()
    }

    /// The writers' own CPU seconds over every round (what each process reported).
    fn own_cpu(&self) -> f64 {
        self.rounds.iter().map(|r| Side::own_cpu_of(r)).sum()
    }

    /// One stream's samples, wall seconds and own CPU seconds over every round.
    fn stream(&self, name: &str) -> (u64, f64, f64) {
        let of = self.rounds.iter().flatten().filter(|f| f.name == name);
        of.fold((0, 0.0, 0.0), |(n, w, c), f| {
            (
                n + f.result["samples"].as_u64().unwrap_or(0),
                w + f.after.as_secs_f64(),
                c + f.result["cpu_seconds"].as_f64().unwrap_or(0.0),
            )
        })
    }

    fn to_json(&self, seconds: f64) -> Value {
        json!({
            "label": self.label,
            "x_real_time": self.x_real_time(seconds),
            "rounds": self.rounds.iter().map(|r| json!({
                "x_real_time": seconds / Side::round_wall(r).max(1e-9),
                "cpu_seconds": Side::own_cpu_of(r),
                "streams": r.iter().map(|f| json!({
                    "stream": f.name, "wall_seconds": f.after.as_secs_f64(),
                    "x_real_time": seconds / f.after.as_secs_f64().max(1e-9),
                    "result": f.result})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

pub(super) fn run(args: &Options) -> Result<bool> {
    let seconds = args
        .rig_seconds
        .unwrap_or(if args.quick { 2.0 } else { 60.0 });
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(UsageError::RigSeconds { got: seconds }.into());
    }
    let rounds = match args.rounds {
        Some(0) => return Err(UsageError::Zero { option: "--rounds" }.into()),
        Some(n) => n,
        None => 1,
    };
    let dims = Dims::of(args.quick);
    let work = make_work_dir(args.dir.as_deref())?;
    let load_before = load_average();
    progress(&format!(
        "rig: {seconds} rig seconds x {rounds} round(s), working in {}",
        work.display()
    ));
    let frames_dir = work.join("frames");
    progress("rig: making the frames (JPEG-encoding the camera's)");
    let pool = frames::write_pool(&frames_dir, &dims)?;

    let kind = peer_kind(args);
    let (ours, theirs) = run_rounds(args, &kind, &work, &frames_dir, &dims, seconds, rounds)?;
    let theirs = (kind, theirs);
    let load_after = load_average();

    let total = seconds * rounds as f64;
    let x = ours.side.x_real_time(seconds);
    let cpu_per_s = ours.daemon_cpu / total;
    let drops = ours.drops_status.max(ours.drops_events);
    let mut failures = ours.failures.clone();
    if drops > 0 {
        failures.push(format!(
            "{drops} frames dropped (status {}, events {})",
            ours.drops_status, ours.drops_events
        ));
    }
    let (peer_name, peer_note) = match &theirs.0 {
        PeerKind::Upstream(_) => ("upstream writers", None),
        PeerKind::Stdlib(why) => (
            "stdlib-Python writers",
            Some(format!(
                "upstream roverd not used ({why}): compared with scripts/bench/python_writer.py's \
                 stdlib imitation of roverc's writers instead (lzma preset 0 in batches of 12, \
                 per-channel threads, JPEG frames appended without OpenCV's encoding)"
            )),
        ),
    };
    let peer_text = match &theirs.1 {
        Ok(side) => format!(
            "{peer_name} {:.1}x, {:.2} CPU s",
            side.x_real_time(seconds),
            side.own_cpu() / total
        ),
        Err(e) => format!("{peer_name} unavailable: {}", first_line(&e.to_string())),
    };
    let line = format!(
        "rig: {x:.1}x real time, {cpu_per_s:.2} CPU s per rig s ({peer_text}), drops {drops}, peak RSS {:.0} MiB, lidar frames stored uncompressed {}",
        ours.hwm as f64 / (1u64 << 20) as f64,
        ours.stored
    );
    let ok = failures.is_empty();
    let report = json!({
        "ok": ok,
        "rig_seconds": seconds,
        "rounds": rounds,
        "tiny": args.quick,
        "dir": work,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "load_average": {"before": load_before, "after": load_after},
        "frames": {"camera_jpeg_bytes": {"mean": pool.jpeg_mean, "min": pool.jpeg_min,
                                         "max": pool.jpeg_max},
                   "lidar_xz_ratio": pool.lidar_ratio},
        "ours": {
            "side": ours.side.to_json(seconds),
            "daemon_cpu_seconds": ours.daemon_cpu,
            "daemon_cpu_per_rig_second": cpu_per_s,
            "daemon_system_cpu_seconds": ours.daemon_system,
            "daemon_minor_faults": ours.daemon_minor_faults,
            "drivers_cpu_seconds": ours.side.own_cpu(),
            "rss": {"idle_bytes": ours.idle, "during_max_bytes": ours.during, "hwm_bytes": ours.hwm},
            "drops": {"status": ours.drops_status, "events": ours.drops_events},
            "lzmaf_stored": ours.stored,
            "daemon_exits": ours.exits,
            "data_check": ours.checks,
        },
        "peer": match &theirs.1 {
            Ok(side) => json!({"kind": peer_name, "side": side.to_json(seconds),
                               "cpu_seconds": side.own_cpu(),
                               "cpu_per_rig_second": side.own_cpu() / total}),
            Err(e) => json!({"kind": peer_name, "error": e.to_string()}),
        },
        "peer_note": peer_note,
        "failures": failures,
        "summary": line,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        print_report(&report, &pool, &dims, &ours, &theirs, seconds, peer_name);
        if let Some(n) = &peer_note {
            println!("note: {n}");
        }
        for f in &failures {
            println!("FAILED: {f}");
        }
        println!("{line}");
    }
    finish(&work, args.keep, ok);
    Ok(ok)
}

/// The rig's rounds, ours and the Python writers' summed. Rounds alternate which side goes
/// first, so drift in the machine's load hits both.
fn run_rounds(
    args: &Options,
    kind: &PeerKind,
    work: &Path,
    frames_dir: &Path,
    dims: &Dims,
    seconds: f64,
    rounds: usize,
) -> Result<(Ours, Result<Side>)> {
    let (mut ours, mut theirs): (Option<Ours>, Option<Result<Side>>) = (None, None);
    for round in 0..rounds {
        let mut theirs_round = None;
        if round % 2 == 1 {
            theirs_round = Some(run_python(args, kind, work, frames_dir, seconds, round));
        }
        let o = run_ours(args, work, frames_dir, dims, seconds, round)?;
        let t = match theirs_round {
            Some(t) => t,
            None => run_python(args, kind, work, frames_dir, seconds, round),
        };
        if let Err(e) = &t {
            progress(&format!("rig: the Python writers failed: {e}"));
        }
        progress(&format!(
            "rig: round {}: ours {:.2}x real time, {:.2} daemon CPU s per rig s ({:.2} system, \
             {} minor faults); theirs {}",
            round + 1,
            o.side.x_real_time(seconds),
            o.daemon_cpu / seconds,
            o.daemon_system / seconds,
            o.daemon_minor_faults,
            match &t {
                Ok(t) => format!(
                    "{:.2}x, {:.2} CPU s",
                    t.x_real_time(seconds),
                    t.own_cpu() / seconds
                ),
                Err(_) => "failed".into(),
            }
        ));
        match &mut ours {
            None => ours = Some(o),
            Some(acc) => acc.absorb(o),
        }
        theirs = Some(match (theirs, t) {
            (None, t) => t,
            (Some(Ok(mut acc)), Ok(t)) => {
                acc.rounds.extend(t.rounds);
                Ok(acc)
            }
            (Some(Err(e)), _) | (Some(Ok(_)), Err(e)) => Err(e),
        });
    }
    Ok((
        ours.expect("at least one round"),
        theirs.expect("at least one round"),
    ))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// Our side's run and what it left.
struct Ours {
    side: Side,
    daemon_cpu: f64,
    /// Of `daemon_cpu`, the kernel's (page faults, for one).
    daemon_system: f64,
    daemon_minor_faults: u64,
    idle: u64,
    during: u64,
    hwm: u64,
    drops_status: u64,
    drops_events: u64,
    /// Samples whose `lzmaf` channels the daemon stored uncompressed because compression fell
    /// behind (`status` `lzmaf_stored`): `roverlog compact` recompresses them later.
    stored: u64,
    exits: Vec<Option<i32>>,
    checks: Vec<Value>,
    failures: Vec<String>,
}

impl Ours {
    /// Adds a later round: times and counts add up, memory is the largest.
    fn absorb(&mut self, o: Ours) {
        self.side.rounds.extend(o.side.rounds);
        self.daemon_cpu += o.daemon_cpu;
        self.daemon_system += o.daemon_system;
        self.daemon_minor_faults += o.daemon_minor_faults;
        self.idle = self.idle.max(o.idle);
        self.during = self.during.max(o.during);
        self.hwm = self.hwm.max(o.hwm);
        self.drops_status += o.drops_status;
        self.drops_events += o.drops_events;
        self.stored += o.stored;
        self.exits.extend(o.exits);
        self.checks.extend(o.checks);
        self.failures.extend(o.failures);
    }
}

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1.7e9, |d| d.as_secs() as f64)
}

/// How long a side may take after `go`: the rig seconds at a twentieth of real time, plus a
/// margin for a loaded machine.
fn deadline(seconds: f64) -> Duration {
    Duration::from_secs_f64(300.0 + 20.0 * seconds)
}

/// One round of our side: a fresh daemon and data root, the four drivers pushing into it
/// together, then its figures and the checks of what it stored.
fn run_ours(
    args: &Options,
    work: &Path,
    frames_dir: &Path,
    dims: &Dims,
    seconds: f64,
    round: usize,
) -> Result<Ours> {
    let name = format!("rig-{}", round + 1);
    let (cfg, cfg_path) = write_config(work, &name, args.daemon_config.as_deref())?;
    let mut daemon = DaemonChild::start(&cfg, &cfg_path, work, &name)?;
    let pid = daemon.child.id();
    let sampler = procfs::RssSampler::start(pid, Duration::from_millis(10));
    std::thread::sleep(Duration::from_millis(500));
    let idle = procfs::status_bytes(pid, "VmRSS").unwrap_or(0);
    sampler.take_max();

    let commands = driver_commands(
        &current_exe()?,
        &cfg.sockets.ingest,
        &daemon.trace_dir,
        frames_dir,
        dims,
        seconds,
    );
    progress("rig: our drivers into the daemon");
    let mut cpu0 = procfs::CpuSplit::default();
    let streams = run_together(&name, commands, work, deadline(seconds), || {
        cpu0 = procfs::cpu_split(pid).unwrap_or_default();
    })?;
    let split = procfs::cpu_split(pid).unwrap_or_default().since(cpu0);

    let during = sampler.take_max();
    let status = ctl(&cfg.sockets.control, json!({"cmd": "status"}))?;
    let hwm = procfs::status_bytes(pid, "VmHWM").unwrap_or(0);
    drop(sampler);
    let exit = daemon.stop()?;
    let checked = check_round(&daemon, exit, &streams, seconds);
    Ok(Ours {
        side: Side {
            label: "roverlog daemon".into(),
            rounds: vec![streams],
        },
        daemon_cpu: split.user + split.system,
        daemon_system: split.system,
        daemon_minor_faults: split.minor_faults,
        idle,
        during,
        hwm,
        drops_status: sensors_sum(&status, "drops"),
        drops_events: checked.drops_events,
        stored: sensors_sum(&status, "lzmaf_stored"),
        exits: vec![exit],
        checks: checked.data,
        failures: checked.failures,
    })
}

/// `roverlog bench-rig-driver` for each rig stream, into the daemon at `ingest`.
fn driver_commands(
    exe: &Path,
    ingest: &Path,
    trace_dir: &Path,
    frames_dir: &Path,
    dims: &Dims,
    seconds: f64,
) -> Vec<(String, Command)> {
    let t0 = epoch_now();
    STREAMS
        .iter()
        .map(|s| {
            let mut c = Command::new(exe);
            c.arg("bench-rig-driver")
                .arg("--socket")
                .arg(ingest)
                .args(["--stream", s.name(), "--frames"])
                .arg(frames_dir)
                .args(["--seconds", &seconds.to_string(), "--t0", &t0.to_string()])
                .arg("--trace-dir")
                .arg(trace_dir);
            if dims == &Dims::TINY {
                c.arg("--tiny");
            }
            (s.name().to_string(), c)
        })
        .collect()
}

/// What a round of ours left on disk, checked after the daemon stopped.
struct Checked {
    /// Frames the trace's `events.jsonl` says were dropped.
    drops_events: u64,
    /// Every sensor's data check ([`check_data`]).
    data: Vec<Value>,
    failures: Vec<String>,
}

/// The daemon's exit, the drops its events record, every stream sent in full and durable,
/// the data on disk intact, and the lidar's sidecar written.
fn check_round(
    daemon: &DaemonChild,
    exit: Option<i32>,
    streams: &[Finished],
    seconds: f64,
) -> Checked {
    let mut failures = Vec::new();
    if exit != Some(0) {
        failures.push(format!(
            "the daemon exited with {exit:?} after SIGTERM; see {}",
            daemon.log.display()
        ));
    }
    let drops_events = events_drops(&daemon.trace_dir).unwrap_or_else(|e| {
        failures.push(format!("reading the trace's events: {e}"));
        0
    });
    let expected: BTreeMap<String, u64> = streams
        .iter()
        .map(|f| (f.name.clone(), f.result["durable"].as_u64().unwrap_or(0)))
        .collect();
    for (s, f) in STREAMS.iter().zip(streams) {
        let sent = f.result["samples"].as_u64().unwrap_or(0);
        if sent != s.samples(seconds) || expected[&f.name] != sent {
            failures.push(format!(
                "{}: sent {sent} of {}, durable {}",
                f.name,
                s.samples(seconds),
                expected[&f.name]
            ));
        }
    }
    let data = check_data(&daemon.trace_dir, &expected);
    if !data.iter().all(|c| c["ok"] == true) {
        failures.push("data check failed: not every sample sent is on disk intact".into());
    }
    let lidar_json = daemon.trace_dir.join("lidar").join("lidar.json");
    if !lidar_json.is_file() {
        failures.push(format!("{} is missing", lidar_json.display()));
    }
    Checked {
        drops_events,
        data,
        failures,
    }
}

/// Which Python writers are compared.
enum PeerKind {
    /// Upstream roverd's own channels, in this interpreter.
    Upstream(PathBuf),
    /// The stdlib imitation; why upstream was not used.
    Stdlib(String),
}

fn peer_kind(args: &Options) -> PeerKind {
    let upstream = args
        .upstream_python
        .clone()
        .or_else(|| std::env::var_os(UPSTREAM_ENV).map(PathBuf::from));
    match upstream {
        Some(py) => PeerKind::Upstream(py),
        None => PeerKind::Stdlib(format!("no --upstream-python or {UPSTREAM_ENV}")),
    }
}

fn run_python(
    args: &Options,
    kind: &PeerKind,
    work: &Path,
    frames_dir: &Path,
    seconds: f64,
    round: usize,
) -> Result<Side> {
    (|| {
        let script =
            repo_file("scripts/bench/python_writer.py").ok_or(BaselineError::NotFound {
                file: "scripts/bench/python_writer.py",
                hint: " (run from the repository)",
            })?;
        let (py, label) = match kind {
            PeerKind::Upstream(py) => {
                let out = Command::new(py)
                    .args(["-c", "import roverd.sensors, cv2"])
                    .output()
                    .map_err(|error| CommandError::Start {
                        command: py.display().to_string(),
                        error,
                    })?;
                if !out.status.success() {
                    return Err(ScenarioError::UpstreamPython {
                        python: py.clone(),
                        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                    }
                    .into());
                }
                (py.clone(), "upstream roverd writers")
            }
            PeerKind::Stdlib(_) => {
                let (py, _) = python_writer(args.python.as_deref())?;
                (py, "stdlib-Python writers")
            }
        };
        let out = work.join(format!("python-rig-{}", round + 1));
        let manifest = frames_dir.join(MANIFEST);
        let t0 = epoch_now();
        let commands = STREAMS
            .iter()
            .map(|s| {
                let mut c = Command::new(&py);
                c.arg(&script)
                    .arg("--dir")
                    .arg(&out)
                    .args(["--workload", "rig", "--stream", s.name(), "--manifest"])
                    .arg(&manifest)
                    .args(["--seconds", &seconds.to_string(), "--t0", &t0.to_string()]);
                if matches!(kind, PeerKind::Upstream(_)) {
                    c.arg("--upstream");
                }
                (s.name().to_string(), c)
            })
            .collect();
        progress(&format!("rig: {label}"));
        let what = format!("python-{}", round + 1);
        let streams = run_together(&what, commands, work, deadline(seconds), || {})?;
        // With --keep, the Python writers' trace stays beside ours (the kept directory).
        if !args.keep {
            let _ = std::fs::remove_dir_all(&out);
        }
        Ok(Side {
            label: label.into(),
            rounds: vec![streams],
        })
    })()
}

#[allow(clippy::too_many_arguments)]
fn print_report(
    report: &Value,
    pool: &PoolSummary,
    dims: &Dims,
    ours: &Ours,
    theirs: &(PeerKind, Result<Side>),
    seconds: f64,
    peer_name: &str,
) {
    let (h, w) = dims.camera;
    let (rows, cols) = dims.lidar;
    let rounds = ours.side.rounds.len();
    println!(
        "roverlog bench --only rig: {seconds} rig seconds x {rounds} round(s), {} CPUs, load average {} -> {}",
        report["cpus"],
        report["load_average"]["before"].as_str().unwrap_or("?"),
        report["load_average"]["after"].as_str().unwrap_or("?"),
    );
    println!(
        "frames: camera {w}x{h} JPEG q{} {:.0} KB mean ({:.0}-{:.0}); lidar {rows}x{cols} x3, .xz preset 0 ratio {:.2}",
        frames::JPEG_QUALITY,
        pool.jpeg_mean as f64 / 1e3,
        pool.jpeg_min as f64 / 1e3,
        pool.jpeg_max as f64 / 1e3,
        pool.lidar_ratio
    );
    println!();
    println!("| stream | rate | samples | roverlog wall s | x real time | {peer_name} wall s | x real time | their CPU s |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let x = |wall: f64| format!("{:.2}x", seconds * rounds as f64 / wall.max(1e-9));
    for s in STREAMS {
        let (n, wall, _) = ours.side.stream(s.name());
        let (pw, px, pc) = match &theirs.1 {
            Ok(t) => {
                let (_, pw, pc) = t.stream(s.name());
                (format!("{pw:.2}"), x(pw), format!("{pc:.2}"))
            }
            Err(_) => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {} | {} Hz | {n} | {wall:.2} | {} | {pw} | {px} | {pc} |",
            s.name(),
            s.hz(),
            x(wall),
        );
    }
    println!();
    let wall: f64 = ours.side.rounds.iter().map(|r| Side::round_wall(r)).sum();
    println!(
        "daemon: {:.1} CPU s ({:.1} system, {} minor faults) over {wall:.1} wall s ({:.2} cores), RSS idle {}, max sampled {}, peak {}; drivers' own CPU {:.1} s",
        ours.daemon_cpu,
        ours.daemon_system,
        ours.daemon_minor_faults,
        ours.daemon_cpu / wall.max(1e-9),
        mib(ours.idle),
        mib(ours.during),
        mib(ours.hwm),
        ours.side.own_cpu(),
    );
    if let Ok(t) = &theirs.1 {
        let wall: f64 = t.rounds.iter().map(|r| Side::round_wall(r)).sum();
        println!(
            "{peer_name}: {:.1} CPU s over {wall:.1} wall s ({:.2} cores; all four processes, producers included)",
            t.own_cpu(),
            t.own_cpu() / wall.max(1e-9)
        );
    }
}
