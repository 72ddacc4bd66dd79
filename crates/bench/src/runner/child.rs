//! The daemon under test as a child process: its working directory, its config, start,
//! SIGTERM and the control socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use roverlog_core::format::events::{read_events, Event};
use roverlog_daemon::Config;

use super::error::{current_exe, DaemonError, Result, RunError, UsageError};

pub(super) fn make_work_dir(base: Option<&Path>) -> Result<PathBuf> {
    let base = match base {
        Some(b) => b.to_path_buf(),
        None if Path::new("target").is_dir() => PathBuf::from("target/bench-tmp"),
        None => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&base).map_err(|e| RunError::io("creating", &base, e))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let dir = base.join(format!("roverlog-bench-{}-{stamp}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| RunError::io("creating", &dir, e))?;
    dir.canonicalize()
        .map_err(|e| RunError::io("resolving", &dir, e))
}

/// The daemon's config: the defaults, except where its files and sockets go and the lidar
/// sensor's channel stored as `lzmaf`. A long shutdown deadline: SIGTERM must not lose data
/// because this machine is slow.
pub(super) fn write_config(
    work: &Path,
    scenario: &str,
    extra: Option<&str>,
) -> Result<(Config, PathBuf)> {
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
    if scenario == "dashboard" {
        v["http_listen"] = json!("127.0.0.1:0");
    }
    if scenario == "foxglove" {
        v["foxglove_listen"] = json!("127.0.0.1:0");
    }
    if let Some(extra) = extra {
        let extra: Value = serde_json::from_str(extra).map_err(UsageError::DaemonConfigJson)?;
        let Some(keys) = extra.as_object() else {
            return Err(UsageError::DaemonConfigNotObject { got: extra }.into());
        };
        for (k, x) in keys {
            v[k] = x.clone();
        }
    }
    let path = work.join(format!("roverlog-{scenario}.json"));
    let bytes = serde_json::to_vec_pretty(&v).expect("a JSON value serialises");
    std::fs::write(&path, bytes).map_err(|e| RunError::io("writing", &path, e))?;
    let cfg = Config::load(&path)?;
    Ok((cfg, path))
}

/// How long the daemon may take to get ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// `roverlog daemon --config <cfg>`, run from this executable.
pub(super) struct DaemonChild {
    pub(super) child: Child,
    pub(super) log: PathBuf,
    pub(super) trace_dir: PathBuf,
}

impl DaemonChild {
    pub(super) fn start(
        cfg: &Config,
        cfg_path: &Path,
        work: &Path,
        scenario: &str,
    ) -> Result<DaemonChild> {
        DaemonChild::start_when(cfg, cfg_path, work, scenario, true)
    }

    /// [`DaemonChild::start`]; ready once `status` answers, and (when `recording`) reports
    /// the trace it records.
    pub(super) fn start_when(
        cfg: &Config,
        cfg_path: &Path,
        work: &Path,
        scenario: &str,
        recording: bool,
    ) -> Result<DaemonChild> {
        let exe = current_exe()?;
        let log = work.join(format!("daemon-{scenario}.log"));
        let log_file =
            std::fs::File::create(&log).map_err(|e| RunError::io("creating", &log, e))?;
        let child = Command::new(&exe)
            .args(["daemon", "--config"])
            .arg(cfg_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|error| DaemonError::Start {
                program: exe,
                hint: "",
                error,
            })?;
        let mut d = DaemonChild {
            child,
            log,
            trace_dir: PathBuf::new(),
        };
        let t0 = Instant::now();
        loop {
            // Ready: the ingest socket accepts, and the control socket says it is recording.
            if UnixStream::connect(&cfg.sockets.ingest).is_ok() {
                if let Ok(st) = ctl(&cfg.sockets.control, json!({"cmd": "status"})) {
                    if let Some(dir) = st["trace_dir"].as_str() {
                        d.trace_dir = PathBuf::from(dir);
                        return Ok(d);
                    }
                    if !recording && st.is_object() {
                        return Ok(d);
                    }
                }
            }
            if let Some(status) = d.child.try_wait().map_err(DaemonError::Wait)? {
                return Err(DaemonError::ExitedAtStart {
                    status,
                    log_text: std::fs::read_to_string(&d.log).unwrap_or_default(),
                    log: d.log.clone(),
                }
                .into());
            }
            if t0.elapsed() > READY_WITHIN {
                let _ = d.child.kill();
                return Err(DaemonError::NotReady {
                    within_s: READY_WITHIN.as_secs(),
                    recording,
                }
                .into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then wait (2 minutes at most); the exit code, or `None` when it was killed.
    pub(super) fn stop(&mut self) -> Result<Option<i32>> {
        // SAFETY: signalling our own child, which has not been reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().map_err(DaemonError::Wait)? {
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
pub(super) fn ctl(socket: &Path, cmd: Value) -> Result<Value> {
    let mut l = serde_json::to_vec(&cmd).expect("a JSON value serialises");
    l.push(b'\n');
    let mut reply = String::new();
    let asked = UnixStream::connect(socket).and_then(|mut s| {
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(&l)?;
        BufReader::new(s).read_line(&mut reply)
    });
    if let Err(error) = asked {
        return Err(DaemonError::Control {
            socket: socket.to_path_buf(),
            cmd,
            error,
        }
        .into());
    }
    serde_json::from_str(&reply).map_err(|error| {
        DaemonError::ControlReply {
            socket: socket.to_path_buf(),
            cmd,
            reply,
            error,
        }
        .into()
    })
}

/// The sum of a per-sensor counter of the daemon's `status` (`drops`, `lzmaf_stored`).
pub(super) fn sensors_sum(status: &Value, key: &str) -> u64 {
    status["sensors"].as_object().map_or(0, |m| {
        m.values().map(|s| s[key].as_u64().unwrap_or(0)).sum()
    })
}

/// The samples the `drop` events of a trace's `events.jsonl` count.
pub(super) fn events_drops(trace: &Path) -> roverlog_core::Result<u64> {
    Ok(read_events(trace)?
        .iter()
        .map(|e| match &e.event {
            Event::Drop { count, .. } => *count,
            _ => 0,
        })
        .sum())
}

/// `n` socket sinks at once (one connection and thread each, in their own directories), as
/// the daemon gets `n` sensors: total records over the slowest one's time.
/// A file removed when this goes out of scope, also on an early error (the dd source lives
/// in memory, outside the work directory).
pub(super) struct RemoveOnDrop(pub(super) PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
