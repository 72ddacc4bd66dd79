//! `roverlog bench --only offload`: `roverlog offload` against `rclone copy` (Debian's
//! rclone, what red-rover's crew used) to the same S3 server (Garage on 127.0.0.1) in the
//! same run, with the same parallelism: at most `jobs` requests in flight for both (ours
//! `--jobs N`; rclone `--transfers N --s3-upload-concurrency 1`, so N files at a time, one
//! part each), the same part size (8 MiB; rclone's `--s3-chunk-size 8M --s3-upload-cutoff
//! 8M`), the same trace, alternating which goes first. Figures:
//!
//! - throughput, ours / rclone (target >= 1.0x);
//! - bytes re-sent after `kill -9` (three kills at a quarter, half and three quarters of the
//!   trace, then the same command to the end), against the bound the journal promises
//!   (kills x jobs parts).
//!
//! GETs and bytes per random frame read in place are counted by the tests, with the store's
//! request counters (`tests/cli/s3read.rs`, `python/tests/test_redrover_s3.py`; BENCHMARKS.md).

mod garage;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use roverlog_core::format::meta::{ChannelMeta, SensorMeta};
use roverlog_core::format::{ChannelFormat, DType, SensorWriter, WriterOptions};
use serde_json::{json, Value};

pub use garage::Garage;

/// The part size both tools use.
pub const PART: u64 = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum OffloadBenchError {
    #[error("{what} is missing at {}: {how}", path.display())]
    Missing {
        what: &'static str,
        path: PathBuf,
        how: &'static str,
    },
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("garage {args}: {detail}")]
    Garage { args: String, detail: String },
    #[error("{what} failed ({status}): {output}")]
    Failed {
        what: String,
        status: std::process::ExitStatus,
        output: String,
    },
    #[error("{what}: did not end within {secs} s (killed)")]
    TooLong { what: String, secs: u64 },
    #[error("{what}: did not pass {mark} bytes within {secs} s")]
    Stuck { what: String, mark: u64, secs: u64 },
    #[error("writing the bench trace: {0}")]
    Trace(roverlog_core::error::Error),
}

impl OffloadBenchError {
    fn io(what: impl Into<String>, error: std::io::Error) -> Self {
        OffloadBenchError::Io {
            what: what.into(),
            error,
        }
    }
}

use OffloadBenchError as E;

/// How the bench runs.
#[derive(Debug, Clone)]
pub struct Setup {
    /// A fresh working directory (the trace, Garage's data, the journals).
    pub work: PathBuf,
    /// The `roverlog` executable (`roverlog offload` is what is measured).
    pub exe: PathBuf,
    /// A ~100 MiB trace instead of ~256 MiB.
    pub quick: bool,
    pub rounds: usize,
    pub jobs: usize,
}

/// The figures.
#[derive(Debug, Clone)]
pub struct Report {
    pub bytes: u64,
    pub jobs: usize,
    /// Seconds per round.
    pub ours: Vec<f64>,
    pub rclone: Vec<f64>,
    /// Ours with `--jobs 1` (what the job did before it sent in parallel), for comparison.
    pub ours_one: Vec<f64>,
    pub kills: usize,
    pub resent: u64,
    pub resent_bound: u64,
}

impl Report {
    fn mb_s(&self, secs: &[f64]) -> f64 {
        self.bytes as f64 * secs.len() as f64 / 1e6 / secs.iter().sum::<f64>().max(1e-9)
    }

    /// Ours over rclone's throughput, every round together.
    pub fn ratio(&self) -> f64 {
        self.mb_s(&self.ours) / self.mb_s(&self.rclone).max(1e-9)
    }

    /// Whether both targets are met: >= 1.0x, and re-sent bytes within the bound.
    pub fn met(&self) -> bool {
        self.ratio() >= 1.0 && self.resent <= self.resent_bound
    }

    pub fn to_json(&self) -> Value {
        json!({
            "scenario": "offload",
            "bytes": self.bytes,
            "jobs": self.jobs,
            "ours_mb_s": self.mb_s(&self.ours),
            "rclone_mb_s": self.mb_s(&self.rclone),
            "ours_secs": self.ours,
            "ours_jobs1_mb_s": self.mb_s(&self.ours_one),
            "rclone_secs": self.rclone,
            "ratio": self.ratio(),
            "target_ratio": 1.0,
            "kills": self.kills,
            "resent_bytes": self.resent,
            "resent_bound_bytes": self.resent_bound,
            "met": self.met(),
            "gets_per_random_frame": null,
        })
    }

    pub fn print(&self) {
        let ok = |b: bool| if b { "met" } else { "NOT MET" };
        println!(
            "offload of a {:.0} MB trace to Garage on 127.0.0.1, {} requests in flight, {} round(s):",
            self.bytes as f64 / 1e6,
            self.jobs,
            self.ours.len()
        );
        println!(
            "  throughput  roverlog offload {:>7.1} MB/s   rclone copy {:>7.1} MB/s   ratio {:.2}x (target >= 1.0x: {})",
            self.mb_s(&self.ours),
            self.mb_s(&self.rclone),
            self.ratio(),
            ok(self.ratio() >= 1.0)
        );
        println!(
            "  for comparison: roverlog offload --jobs 1 {:>7.1} MB/s",
            self.mb_s(&self.ours_one)
        );
        println!(
            "  re-sent after {} kill -9: {} bytes ({:.1} parts of 8 MiB; bound {} = kills x jobs parts: {})",
            self.kills,
            self.resent,
            self.resent as f64 / PART as f64,
            self.resent_bound,
            ok(self.resent <= self.resent_bound)
        );
        println!("  GETs and bytes per random frame read in place: counted by the s3read tests (BENCHMARKS.md)");
    }
}

/// A sealed trace `<data>/<name>` of `sensors` sensors, each one `raw` channel of `frames`
/// frames of 1 MiB noise (nothing compresses it), as the daemon leaves it.
fn write_trace(data: &Path, name: &str, sensors: usize, frames: u64) -> Result<PathBuf, E> {
    let t = data.join(name);
    let mk = |p: &Path| std::fs::create_dir_all(p).map_err(|e| E::io(p.display().to_string(), e));
    mk(&t.join("_roverlog"))?;
    let write = |p: PathBuf, text: String| {
        std::fs::write(&p, text).map_err(|e| E::io(p.display().to_string(), e))
    };
    write(t.join("config.yaml"), "{}\n".into())?;
    write(
        t.join("_roverlog/events.jsonl"),
        format!(
            "{{\"t\":1.0,\"event\":\"start\",\"trace\":\"{name}\",\"reason\":\"command\",\"label\":null,\"sensors\":[]}}\n\
             {{\"t\":2.0,\"event\":\"stop\",\"trace\":\"{name}\",\"reason\":\"command\",\"sensors\":{{}}}}\n"
        ),
    )?;
    let frame = 1 << 20;
    for s in 0..sensors {
        let meta = SensorMeta {
            channels: [(
                "a".to_string(),
                ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![frame], ""),
            )]
            .into_iter()
            .collect(),
        };
        let mut w = SensorWriter::create(&t.join(format!("s{s}")), meta, &WriterOptions::default())
            .map_err(E::Trace)?;
        for i in 0..frames {
            let a = crate::noise(frame, (s as u64) << 32 | i);
            w.append(i as f64 * 0.1, &[&a]).map_err(E::Trace)?;
        }
        w.finish().map_err(E::Trace)?;
    }
    Ok(t)
}

/// The bytes of the trace's files (what both tools send).
fn trace_bytes(trace: &Path) -> u64 {
    roverlog_core::format::checksum::files(trace)
        .unwrap_or_default()
        .iter()
        .map(|f| std::fs::metadata(trace.join(f)).map_or(0, |m| m.len()))
        .sum()
}

fn spawn(mut cmd: Command, what: &str) -> Result<Child, E> {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| E::io(what, e))
}

/// How long one run of either tool may take before the bench gives up on it (a store that
/// stalls, a disk whose flushes take minutes on a loaded machine).
const RUN_BOUND: Duration = Duration::from_secs(300);

fn finish(mut child: Child, what: &str) -> Result<(), E> {
    let t0 = Instant::now();
    while child.try_wait().map_err(|e| E::io(what, e))?.is_none() {
        if t0.elapsed() > RUN_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            return Err(E::TooLong {
                what: what.into(),
                secs: RUN_BOUND.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().map_err(|e| E::io(what, e))?;
    if !out.status.success() {
        return Err(E::Failed {
            what: what.into(),
            status: out.status,
            output: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}

/// `roverlog offload DATA s3://bench/<prefix> --jobs N` with this run's journal.
fn ours(s: &Setup, g: &Garage, data: &Path, prefix: &str, journal: &Path) -> Command {
    ours_jobs(s, g, data, prefix, journal, s.jobs)
}

fn ours_jobs(
    s: &Setup,
    g: &Garage,
    data: &Path,
    prefix: &str,
    journal: &Path,
    jobs: usize,
) -> Command {
    let mut c = Command::new(&s.exe);
    c.arg("offload")
        .arg(data)
        .arg(format!("s3://bench/{prefix}"))
        .args(["--jobs", &jobs.to_string(), "--part-size", "8MiB"])
        .arg("--journal")
        .arg(journal);
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            c.env_remove(k);
        }
    }
    c.envs(g.aws_env());
    c
}

/// `rclone copy TRACE :s3:bench/<prefix>/<trace>`, N files at a time, one part each.
fn rclone(s: &Setup, g: &Garage, trace: &Path, prefix: &str) -> Command {
    let name = trace.file_name().unwrap_or_default().to_string_lossy();
    let mut c = Command::new("rclone");
    c.arg("copy")
        .arg(trace)
        .arg(format!(":s3:bench/{prefix}/{name}"))
        .args(["--transfers", &s.jobs.to_string(), "--checkers"])
        .arg(s.jobs.to_string())
        .args([
            "--s3-upload-concurrency",
            "1",
            "--s3-chunk-size",
            "8M",
            "--s3-upload-cutoff",
            "8M",
            "--s3-no-check-bucket",
        ])
        .env("RCLONE_CONFIG", s.work.join("rclone.conf"))
        .envs(g.rclone_env());
    // Its S3 client reads `AWS_*` too (a CA bundle for plain http is an error there).
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            c.env_remove(k);
        }
    }
    c
}

fn rclone_present() -> Result<(), E> {
    match Command::new("rclone")
        .arg("version")
        .stdout(Stdio::null())
        .status()
    {
        Ok(st) if st.success() => Ok(()),
        _ => Err(E::Missing {
            what: "rclone",
            path: PathBuf::from("rclone (on PATH)"),
            how: "scripts/test installs Debian's rclone (apt-get install rclone)",
        }),
    }
}

fn timed(cmd: Command, what: &str) -> Result<f64, E> {
    let t0 = Instant::now();
    finish(spawn(cmd, what)?, what)?;
    Ok(t0.elapsed().as_secs_f64())
}

/// The journal's count of bytes handed to the store.
fn journal_sent(path: &Path) -> u64 {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|j| j["sent"].as_u64())
        .unwrap_or(0)
}

/// Runs the bench: the trace written, Garage started, `rounds` of each tool, then the kills.
pub fn run(s: &Setup, progress: &dyn Fn(&str)) -> Result<Report, E> {
    rclone_present()?;
    let g = Garage::start(&s.work.join("garage"), "bench")?;
    let data = s.work.join("data");
    let (sensors, frames) = if s.quick { (4, 24) } else { (4, 64) };
    progress(&format!("writing a trace of {sensors} x {frames} MiB"));
    let trace = write_trace(&data, "2026.11.28-09.00.00", sensors, frames)?;
    let bytes = trace_bytes(&trace);
    let mut report = Report {
        bytes,
        jobs: s.jobs,
        ours: Vec::new(),
        rclone: Vec::new(),
        ours_one: Vec::new(),
        kills: 3,
        resent: 0,
        resent_bound: 0,
    };
    for r in 0..s.rounds.max(1) {
        let journal = s.work.join(format!("journal-{r}.json"));
        let a = ours(s, &g, &data, &format!("ours-{r}"), &journal);
        let b = rclone(s, &g, &trace, &format!("rclone-{r}"));
        // Alternating which goes first.
        if r % 2 == 0 {
            report.ours.push(timed(a, "roverlog offload")?);
            report.rclone.push(timed(b, "rclone copy")?);
        } else {
            report.rclone.push(timed(b, "rclone copy")?);
            report.ours.push(timed(a, "roverlog offload")?);
        }
        let one = s.work.join(format!("journal-one-{r}.json"));
        let c = ours_jobs(s, &g, &data, &format!("one-{r}"), &one, 1);
        report.ours_one.push(timed(c, "roverlog offload --jobs 1")?);
        progress(&format!(
            "round {r}: roverlog offload {:.2} s, rclone copy {:.2} s, --jobs 1 {:.2} s",
            report.ours[r], report.rclone[r], report.ours_one[r]
        ));
    }
    // Killed at a quarter, half and three quarters of the trace, then run to the end.
    let journal = s.work.join("journal-kills.json");
    for k in 1..=report.kills as u64 {
        let mark = bytes * k / (report.kills as u64 + 1);
        let mut child = spawn(ours(s, &g, &data, "kills", &journal), "roverlog offload")?;
        let t0 = Instant::now();
        while journal_sent(&journal) < mark {
            let ended = child.try_wait().map_err(|e| E::io("roverlog offload", e))?;
            if ended.is_some() || t0.elapsed() > Duration::from_secs(300) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(E::Stuck {
                    what: format!("roverlog offload before kill {k}"),
                    mark,
                    secs: t0.elapsed().as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // SIGKILL: no chance to tidy up.
        let _ = child.kill();
        let _ = child.wait();
    }
    finish(
        spawn(ours(s, &g, &data, "kills", &journal), "roverlog offload")?,
        "roverlog offload after the kills",
    )?;
    // The journal counts the MD5 CSV too.
    let sent = journal_sent(&journal);
    report.resent = sent.saturating_sub(bytes + csv_bytes(&trace));
    report.resent_bound = report.kills as u64 * s.jobs as u64 * PART;
    Ok(report)
}

/// The size of the trace's `file,md5` CSV (one line per file, 32 hex digits each).
fn csv_bytes(trace: &Path) -> u64 {
    let files = roverlog_core::format::checksum::files(trace).unwrap_or_default();
    "file,md5\n".len() as u64
        + files
            .iter()
            .map(|f| f.to_string_lossy().len() as u64 + 1 + 32 + 1)
            .sum::<u64>()
}

/// `roverlog bench --only offload`: the bench in a fresh `work` directory (removed after,
/// kept on an error), its figures printed (JSON with `json`); true when its targets are met.
pub fn main(work: &Path, quick: bool, json: bool, rounds: Option<usize>) -> Result<bool, E> {
    let setup = Setup {
        work: work.to_path_buf(),
        exe: std::env::current_exe().map_err(|e| E::io("finding this executable", e))?,
        quick,
        rounds: rounds.unwrap_or(if quick { 2 } else { 3 }),
        jobs: 4,
    };
    let report = run(&setup, &|line| eprintln!("bench: {line}"))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        );
    } else {
        report.print();
    }
    let _ = std::fs::remove_dir_all(work);
    Ok(report.met())
}
