//! The daemon scenarios of the bench (rows of [`super::table::SCENARIOS`]): the baselines and
//! the daemon driven with the same load in alternating rounds, the data checked after each
//! daemon run.

use super::error::{DaemonError, RunError, ScenarioError, ViewerError};
use super::*;
use std::sync::Arc;

/// The baseline writer: (python, script), or why there is none.
pub(super) type PyWriter = std::result::Result<(PathBuf, PathBuf), BaselineError>;

/// What one daemon scenario is given: the running daemon's config and the bench's settings;
/// what it sends is counted into `expected` (sensor -> samples) for the data check.
pub(super) struct Ctx<'a> {
    pub scenario: &'static str,
    pub args: &'a Options,
    pub sizes: &'a Sizes,
    pub cfg: &'a Config,
    pub work: &'a Path,
    pub py: &'a PyWriter,
    pub expected: &'a mut BTreeMap<String, u64>,
}

/// What a scenario measured: its rows, and the daemon memory its load is allowed (queues,
/// read buffers, the frame pool) besides the write buffers of the channel files it opened.
pub(super) struct Measured {
    pub rows: Vec<Row>,
    pub budget: u64,
    pub files_open: u64,
}

impl Ctx<'_> {
    /// Drives the daemon with `spec`, checks every sensor's samples were acknowledged
    /// durable, and records them as expected on disk.
    fn drive(&mut self, spec: &LoadSpec) -> Result<Throughput> {
        let scenario = self.scenario;
        let report =
            load::drive(&self.cfg.sockets.ingest, spec).map_err(|e| ScenarioError::Drive {
                scenario,
                error: Box::new(e),
            })?;
        for s in &report.sensors {
            if s.durable < s.resumed_from + s.samples {
                return Err(ScenarioError::NotDurable {
                    sensor: s.sensor.clone(),
                    durable: s.durable,
                    sent: s.samples,
                }
                .into());
            }
            self.expected
                .insert(s.sensor.clone(), s.resumed_from + s.samples);
        }
        Ok(report.total)
    }
}

/// Runs one daemon scenario of the table; its memory budget is the scenario's plus one write
/// buffer per channel file it opened (ts + data channels, + the lzmaf index).
pub(super) fn run_scenario(scenario: &Scenario, mut ctx: Ctx) -> Result<(Vec<Row>, u64)> {
    let buffers = ctx.cfg.storage.buffer_bytes as u64;
    let m = (scenario.run)(&mut ctx)?;
    Ok((m.rows, m.budget + m.files_open * buffers))
}

/// Per live connection: its read buffer holds at least 64 KiB, or one whole frame.
fn read_buf(frame: usize) -> u64 {
    (frame as u64 + 20).max(64 << 10)
}

/// Large frames are received into pooled buffers; the pool keeps up to FREE_MAX of them free
/// (released after a second without large frames).
fn pool(frame: usize) -> u64 {
    // A frame on the wire: `u32 len`, `f64 ts`, then the sample (the bench sends no seq).
    if frame + 12 >= roverlog_daemon::ingest::POOLED_FRAME {
        roverlog_daemon::bufpool::FREE_MAX as u64
    } else {
        0
    }
}

/// Large frames (4 MiB) from two sensors against dd to the same disk (`direct`: the daemon's direct_io against dd oflag=direct), with dd's zeros and a plain socket sink for comparison.
pub(super) fn large_or_direct(ctx: &mut Ctx) -> Result<Measured> {
    let (scenario, args, sizes, cfg, work) = (ctx.scenario, ctx.args, ctx.sizes, ctx.cfg, ctx.work);
    let queue = ctx.cfg.ingest.queue_bytes;
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
    let source = baselines::random_source(mib).map_err(|e| ScenarioError::DdSource(Box::new(e)))?;
    let source = RemoveOnDrop(source);
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
            std::fs::create_dir_all(d).map_err(|e| RunError::io("creating", d, e))?;
        }
        let leave = Leave::Kept;
        for step in 0..steps {
            match ((step + round) % steps, direct) {
                // Target: dd oflag=direct; dd through the page cache for comparison.
                (0, true) => {
                    push_round(&mut dd, baselines::dd_direct(&dirs[0], mib, random, leave))
                }
                (1, true) => push_round(
                    &mut other,
                    baselines::dd_fdatasync(&dirs[1], mib, random, leave),
                ),
                (0, false) => push_round(
                    &mut dd,
                    baselines::dd_fdatasync(&dirs[0], mib, random, leave),
                ),
                (1, false) => push_round(
                    &mut zeros,
                    baselines::dd_fdatasync(&dirs[1], mib, Input::Zeros, leave),
                ),
                // The same bytes through a socket into a file with no format: the
                // copies dd does not make.
                (2, false) => push_round(
                    &mut other,
                    concurrent_sinks(&dirs[2], sizes.large_sensors, frames, frame, Some(leave)),
                ),
                _ => ours.push(ctx.drive(&spec)?),
            }
        }
    }
    drop(source);
    let _ = std::fs::remove_dir_all(&kept);
    let files_open = 2 * sizes.large_sensors as u64;
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
        let b = cfg.storage.buffer_bytes as u64;
        live * (b.max(roverlog_core::format::direct::MIN_DIRECT_BUFFER as u64) - b)
    } else {
        0
    };
    Ok(Measured {
        rows,
        budget: live * (queue + read_buf(frame)) + staging + pool(frame),
        files_open,
    })
}

/// One `write()` per 44-byte IMU sample against a plain socket sink and the upstream-style Python writer, with no-work readers (threads, tokio tasks) as the ceiling.
pub(super) fn imu(ctx: &mut Ctx) -> Result<Measured> {
    let (scenario, sizes, work, py) = (ctx.scenario, ctx.sizes, ctx.work, ctx.py);
    let n = ctx.args.sensors;
    let queue = ctx.cfg.ingest.queue_bytes;
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
            baselines::tokio_discard(n, sizes.imu_samples, 44),
        );
        let p = match py {
            Ok((py, script)) => python_imu(py, script, work, n, sizes.imu_samples),
            Err(e) => Err(e.clone()),
        };
        push_round(&mut python, p);
        ours.push(ctx.drive(&spec)?);
    }
    let files_open = 3 * n as u64;
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
    Ok(Measured {
        rows,
        budget: n as u64 * (queue + read_buf(0)),
        files_open,
    })
}

/// The imu load with a viewer (the dashboard polled at 10 Hz, or a Foxglove client on the whole live feed) against none, in alternating rounds.
pub(super) fn watched(ctx: &mut Ctx) -> Result<Measured> {
    let (scenario, sizes, cfg) = (ctx.scenario, ctx.sizes, ctx.cfg);
    let n = ctx.args.sensors;
    let queue = ctx.cfg.ingest.queue_bytes;
    let viewer = Viewer::when_listening(scenario, &cfg.sockets.control)?;
    // Ten times the imu scenario's samples: rounds of seconds, so each watched round
    // sees tens of requests or messages, not a handful.
    let mut spec = LoadSpec::new(n, Workload::Imu, 10 * sizes.imu_samples);
    spec.prefix = viewer.sensor_prefix().into();
    let (mut quiet, mut watched, mut seen) = (Vec::new(), Vec::new(), 0);
    for round in 0..sizes.rounds {
        // Which side goes first alternates, so drift in the machine hits both.
        for step in 0..2 {
            if (step + round) % 2 == 0 {
                quiet.push(ctx.drive(&spec)?);
            } else {
                let client = viewer.start()?;
                let r = ctx.drive(&spec);
                seen += client.stop()?;
                watched.push(r?);
            }
        }
    }
    let (without, with) = viewer.names();
    for t in &mut quiet {
        t.name = format!("{} ({without})", t.name);
    }
    for t in &mut watched {
        t.name = format!("{} ({with})", t.name);
    }
    eprintln!(
        "bench: {scenario}: {seen} {} during the watched rounds",
        viewer.unit()
    );
    if seen == 0 {
        return Err(ViewerError::SawNothing { scenario }.into());
    }
    let files_open = 3 * n as u64;
    let rows = vec![Row::new(
        scenario,
        &watched,
        Some(Ok(quiet)),
        Unit::SamplesPerSec,
        Some(0.9),
    )];
    Ok(Measured {
        rows,
        budget: n as u64 * (queue + read_buf(0)),
        files_open,
    })
}

/// 256 IMU samples per `write()`: samples/s alone.
pub(super) fn batched(ctx: &mut Ctx) -> Result<Measured> {
    let (scenario, sizes) = (ctx.scenario, ctx.sizes);
    let n = ctx.args.sensors;
    let queue = ctx.cfg.ingest.queue_bytes;
    let mut spec = LoadSpec::new(
        n,
        Workload::ImuBatched {
            per_write: PER_WRITE,
        },
        sizes.batched_samples,
    );
    spec.prefix = "batched".into();
    let ours = ctx.drive(&spec)?;
    let files_open = 3 * n as u64;
    let rows = vec![Row::new(
        scenario,
        &[ours],
        None,
        Unit::SamplesPerSec,
        Some(1_000_000.0),
    )];
    Ok(Measured {
        rows,
        budget: n as u64 * (queue + read_buf(0)),
        files_open,
    })
}

/// 256 KiB lidar frames compressed to lzmaf, against a lidar's 20 Hz.
pub(super) fn lzmaf(ctx: &mut Ctx) -> Result<Measured> {
    let (scenario, sizes, cfg) = (ctx.scenario, ctx.sizes, ctx.cfg);
    let queue = ctx.cfg.ingest.queue_bytes;
    let mut spec = LoadSpec::new(
        1,
        Workload::Lidar { bytes: LIDAR_FRAME },
        sizes.lidar_frames,
    );
    spec.prefix = "lidar".into();
    let mut ours = ctx.drive(&spec)?;
    ours.name = format!(
        "{} lzmaf, {} compress threads",
        ours.name, cfg.storage.compress_threads
    );
    let files_open = 3;
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
    // Compression in flight: the pool's byte bound (one frame more than it at most).
    let chunk = cfg.storage.compress_inflight_bytes as u64 + LIDAR_FRAME as u64;
    Ok(Measured {
        rows,
        budget: queue + read_buf(LIDAR_FRAME) + chunk + pool(LIDAR_FRAME),
        files_open,
    })
}

/// A fresh directory under `base` (or the default place).
/// With `sink` `None` the servers only count what they read ([`baselines::socket_discard`]);
/// otherwise they write it to a file left as `sink` says.
pub(super) fn concurrent_sinks(
    work: &Path,
    n: usize,
    records: u64,
    bytes: usize,
    sink: Option<Leave>,
) -> std::result::Result<Throughput, BaselineError> {
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let dir = work.join(format!("sink{i}"));
            std::thread::spawn(move || {
                std::fs::create_dir_all(&dir).map_err(|e| BaselineError::Dir {
                    path: dir.clone(),
                    error: Arc::new(e),
                })?;
                let r = match sink {
                    Some(leave) => baselines::socket_sink(&dir, records, bytes, leave),
                    None => baselines::socket_discard(&dir, records, bytes),
                };
                let r = r.map_err(BaselineError::from);
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

pub(super) fn aggregate(name: String, parts: &[Throughput]) -> Throughput {
    Throughput {
        name,
        bytes: parts.iter().map(|t| t.bytes).sum(),
        samples: parts.iter().map(|t| t.samples).sum(),
        elapsed: parts.iter().map(|t| t.elapsed).max().unwrap_or_default(),
    }
}

/// The Python interpreter and `scripts/bench/python_writer.py`, or why they are missing.
pub(super) fn python_writer(python: Option<&Path>) -> PyWriter {
    let script = repo_file("scripts/bench/python_writer.py").ok_or(BaselineError::NotFound {
        file: "scripts/bench/python_writer.py",
        hint: " (run from the repository)",
    })?;
    let py = match python {
        Some(p) => p.to_path_buf(),
        None => {
            let env = repo_file("scripts/py-env.sh").ok_or(BaselineError::NotFound {
                file: "scripts/py-env.sh",
                hint: "",
            })?;
            let out = Command::new("bash")
                .arg(env)
                .output()
                .map_err(|e| BaselineError::PyEnvStart(Arc::new(e)))?;
            if !out.status.success() {
                return Err(BaselineError::PyEnvFailed {
                    status: out.status,
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    Ok((py, script))
}

/// `rel` under the current directory or any ancestor of this executable (target/release/..).
pub(super) fn repo_file(rel: &str) -> Option<PathBuf> {
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
pub(super) fn python_imu(
    py: &Path,
    script: &Path,
    work: &Path,
    n: usize,
    samples: u64,
) -> std::result::Result<Throughput, BaselineError> {
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
                .map_err(|e| BaselineError::WriterStart {
                    python: py.to_path_buf(),
                    error: Arc::new(e),
                })
        })
        .collect::<std::result::Result<_, _>>()?;
    let mut parts = Vec::new();
    for c in children {
        let out = c
            .wait_with_output()
            .map_err(|e| BaselineError::WriterWait(Arc::new(e)))?;
        if !out.status.success() {
            return Err(BaselineError::WriterFailed {
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or_default();
        let v: Value = serde_json::from_str(last).map_err(|e| BaselineError::WriterOutput {
            line: last.to_string(),
            error: Arc::new(e),
        })?;
        let num = |key: &'static str| v[key].as_f64().ok_or(BaselineError::WriterField { key });
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
pub(super) fn check_data(trace: &Path, expected: &BTreeMap<String, u64>) -> Vec<Value> {
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

/// A client of what the daemon shows (the dashboard's API, the live Foxglove feed), whose cost
/// to the writers the `dashboard` and `foxglove` scenarios measure.
enum Viewer {
    /// The dashboard at `host:port`.
    Dashboard(String),
    /// The Foxglove feed at `ws://host:port`.
    Foxglove(String),
}

enum Watching {
    Dashboard(super::dashboard::Poller),
    Foxglove(super::foxglove::Watcher),
}

impl Viewer {
    /// The scenario's viewer once the daemon's `status` reports its address: the control
    /// socket answers before the dashboard and the feed listen. At most 10 s.
    fn when_listening(scenario: &'static str, control: &std::path::Path) -> Result<Viewer> {
        let t0 = std::time::Instant::now();
        loop {
            let st = super::child::ctl(control, json!({"cmd": "status"}))?;
            match Viewer::of(scenario, &st) {
                Err(_) if t0.elapsed() < std::time::Duration::from_secs(10) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => return r,
            }
        }
    }

    /// The scenario's viewer, at the address the daemon's `status` reports.
    fn of(scenario: &'static str, status: &Value) -> Result<Viewer> {
        let (section, keys) = if scenario == "dashboard" {
            ("http", "http.url")
        } else {
            ("foxglove", "foxglove.url")
        };
        let Some(url) = status[section]["url"].as_str() else {
            return Err(DaemonError::NoUrl {
                scenario,
                keys,
                status: status.clone(),
            }
            .into());
        };
        Ok(if scenario == "dashboard" {
            let addr = url.trim_start_matches("http://").trim_end_matches('/');
            Viewer::Dashboard(addr.to_owned())
        } else {
            Viewer::Foxglove(url.to_owned())
        })
    }

    fn start(&self) -> Result<Watching> {
        Ok(match self {
            Viewer::Dashboard(addr) => {
                Watching::Dashboard(super::dashboard::Poller::start(addr.clone()))
            }
            Viewer::Foxglove(url) => Watching::Foxglove(super::foxglove::Watcher::start(url)?),
        })
    }

    /// The baseline's and the measured side's labels.
    fn names(&self) -> (&'static str, String) {
        match self {
            Viewer::Dashboard(_) => (
                "no dashboard client",
                format!("dashboard polled at {} Hz", super::dashboard::POLL_HZ),
            ),
            Viewer::Foxglove(_) => (
                "no Foxglove client",
                "a Foxglove client subscribed to every channel".to_owned(),
            ),
        }
    }

    /// The prefix of the load's sensor names.
    fn sensor_prefix(&self) -> &'static str {
        match self {
            Viewer::Dashboard(_) => "dash",
            Viewer::Foxglove(_) => "fox",
        }
    }

    fn unit(&self) -> &'static str {
        match self {
            Viewer::Dashboard(_) => "requests answered",
            Viewer::Foxglove(_) => "feed messages received",
        }
    }
}

impl Watching {
    /// Stops the client; how many requests were answered or messages received.
    fn stop(self) -> Result<u64> {
        match self {
            Watching::Dashboard(p) => p.stop(),
            Watching::Foxglove(w) => w.stop(),
        }
    }
}
