//! `roverlog bench --only faults` (run alone; root): the failing-disk scenarios of
//! docs/disk-failure.md, each `--rounds` times (default 3), against a real daemon:
//!
//! - `fsync_eio`: one fdatasync fails with EIO (the daemon under libfiu's `fiu-run -x`,
//!   `fiu-ctrl` arms a one-time failure);
//! - `enospc`: a small loop-mounted ext4 fills up;
//! - `shutdown`: the ext4 shutdown ioctl on the loop mount (a USB disk pulled out).
//!
//! For each: samples acknowledged durable to the driver and lost on disk (read after the
//! daemon stopped, the image mounted again; must be 0), the `disk_error` alarm's delay after
//! the failure (the daemon's own times: alarm `start` minus the fault's `at`), and the
//! daemon's peak RSS. Needs `fiu-run`/`fiu-ctrl` (Debian `fiu-utils`), `mkfs.ext4`, loop
//! devices.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use roverlog_client::Driver;
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, Sensor, SensorMeta};

use super::child::{ctl, make_work_dir};
use super::error::{current_exe, DaemonError, FaultError, Result, RunError};
use super::{progress, Options};

const SCENARIOS: [&str; 3] = ["fsync_eio", "enospc", "shutdown"];
/// Bytes of one sample (one raw channel).
const SAMPLE: usize = 4000;
/// How long the daemon may take to record, the fault to show, the daemon to stop.
const READY_WITHIN: Duration = Duration::from_secs(30);
const FAULT_WITHIN: Duration = Duration::from_secs(60);
const STOP_WITHIN: Duration = Duration::from_secs(60);

/// One round's figures.
struct Figures {
    acked: u64,
    on_disk: u64,
    alarm_delay_ms: Option<f64>,
    rss_peak: u64,
}

pub(super) fn run(args: &Options) -> Result<bool> {
    let rounds = args.rounds.unwrap_or(3).max(1);
    let work = make_work_dir(args.dir.as_deref())?;
    let mut ok = true;
    let mut rows = Vec::new();
    println!(
        "{:<10} {:>5} {:>8} {:>8} {:>6} {:>14} {:>10}",
        "scenario", "round", "acked", "on_disk", "lost", "alarm_delay", "rss_peak"
    );
    for scenario in SCENARIOS {
        for round in 0..rounds {
            let dir = work.join(format!("{scenario}-{round}"));
            std::fs::create_dir_all(&dir).map_err(|e| RunError::io("creating", &dir, e))?;
            progress(&format!("faults: {scenario}, round {}", round + 1));
            let f = run_round(scenario, &dir).map_err(|e| FaultError::Round {
                scenario,
                round,
                error: Box::new(e),
            })?;
            let lost = f.acked.saturating_sub(f.on_disk);
            ok &= lost == 0 && f.alarm_delay_ms.is_some();
            println!(
                "{:<10} {:>5} {:>8} {:>8} {:>6} {:>14} {:>8.1} MiB",
                scenario,
                round + 1,
                f.acked,
                f.on_disk,
                lost,
                f.alarm_delay_ms
                    .map_or("none".into(), |ms| format!("{ms:.0} ms")),
                f.rss_peak as f64 / (1u64 << 20) as f64
            );
            rows.push(
                json!({"scenario": scenario, "round": round + 1, "acked": f.acked,
                "on_disk": f.on_disk, "lost": lost, "alarm_delay_ms": f.alarm_delay_ms,
                "rss_peak_bytes": f.rss_peak}),
            );
        }
    }
    println!("{}", json!({"faults": rows}));
    if ok && !args.keep {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        // The daemons' logs and the disk images, for a look at what went wrong.
        progress(&format!("kept {}", work.display()));
    }
    Ok(ok)
}

/// A loop-mounted ext4 image, unmounted (lazily) on drop.
struct LoopMount {
    path: PathBuf,
}

impl LoopMount {
    fn new(image: &Path, mib: u64, path: &Path) -> Result<LoopMount> {
        if !image.exists() {
            std::fs::File::create(image)
                .and_then(|f| f.set_len(mib << 20))
                .map_err(|e| RunError::io("creating", image, e))?;
            sh(Command::new("mkfs.ext4")
                .args(["-q", "-F", "-m", "0"])
                .arg(image))?;
        }
        std::fs::create_dir_all(path).map_err(|e| RunError::io("creating", path, e))?;
        sh(Command::new("mount")
            .args(["-t", "ext4", "-o", "loop"])
            .arg(image)
            .arg(path))?;
        Ok(LoopMount {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Runs `cmd`, an error naming it and its stderr when it fails.
fn sh(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().map_err(|error| FaultError::Tool {
        command: format!("{cmd:?}"),
        error,
    })?;
    if !out.status.success() {
        return Err(FaultError::ToolFailed {
            command: format!("{cmd:?}"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
        .into());
    }
    Ok(())
}

fn run_round(scenario: &str, dir: &Path) -> Result<Figures> {
    let image = dir.join("disk.img");
    let mib = if scenario == "enospc" { 8 } else { 32 };
    let mnt = LoopMount::new(&image, mib, &dir.join("mnt"))?;
    let data = mnt.path.join("data");
    let (ingest, control) = (dir.join("run/ingest.sock"), dir.join("run/control.sock"));
    let cfg = dir.join("roverlog.json");
    let config = json!({
        "data_root": data, "ingest_socket": ingest, "control_socket": control,
        "min_free_bytes": 0, "resume_free_bytes": u64::MAX / 2, "fsync": "on_request",
        "disk_check_interval_ms": 100, "shutdown_deadline_ms": 60000,
    });
    let bytes = serde_json::to_vec_pretty(&config).expect("a JSON value serialises");
    std::fs::write(&cfg, bytes).map_err(|e| RunError::io("writing", &cfg, e))?;
    let exe = current_exe()?;
    let (program, hint) = if scenario == "fsync_eio" {
        (PathBuf::from("fiu-run"), ": Debian fiu-utils")
    } else {
        (exe.clone(), "")
    };
    let mut cmd = Command::new(&program);
    if scenario == "fsync_eio" {
        cmd.arg("-x").arg(&exe);
    }
    let log = dir.join("daemon.log");
    let log_file = std::fs::File::create(&log).map_err(|e| RunError::io("creating", &log, e))?;
    cmd.args(["daemon", "--config"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file);
    let mut child = Killed(cmd.spawn().map_err(|error| DaemonError::Start {
        program,
        hint,
        error,
    })?);
    let trace = ready(&control, &mut child.0, &log)?;
    let meta = SensorMeta {
        channels: vec![(
            "x".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![SAMPLE], ""),
        )],
    };
    let (mut drv, _) = Driver::connect(&ingest, "cam", &meta, false)?;
    let sample = vec![0x5Au8; SAMPLE];
    let mut sent = 0u64;
    let mut acked = 0u64;
    let mut send = |drv: &mut Driver, n: u64| -> Option<u64> {
        for _ in 0..n {
            drv.send(sent as f64, None, &[&sample]).ok()?;
            sent += 1;
        }
        drv.sync().ok()
    };
    for _ in 0..5 {
        acked = send(&mut drv, 20).ok_or(FaultError::NoAckBeforeFault)?;
    }
    let pid = child.0.id();
    match scenario {
        "fsync_eio" => sh(Command::new("fiu-ctrl")
            .args([
                "-c",
                "enable name=posix/io/sync/fdatasync,failinfo=5,onetime",
            ])
            .arg(pid.to_string()))?,
        "shutdown" => shut_down(&mnt.path)?,
        _ => {}
    }
    // Send until the disk fails (ENOSPC: until it is full).
    let t0 = Instant::now();
    while let Some(n) = send(&mut drv, 20) {
        acked = acked.max(n);
        if t0.elapsed() > FAULT_WITHIN {
            return Err(FaultError::NeverShowed {
                within_s: FAULT_WITHIN.as_secs(),
            }
            .into());
        }
    }
    drop(drv);
    let alarm_delay_ms = alarm_delay(&control)?;
    let rss_peak = peak_rss(pid)?;
    // SIGTERM, then read the trace from the image mounted again.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    while child.0.try_wait().map_err(DaemonError::Wait)?.is_none() {
        if t0.elapsed() > STOP_WITHIN {
            return Err(DaemonError::NoStop {
                within_s: STOP_WITHIN.as_secs(),
            }
            .into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(mnt);
    let again = LoopMount::new(&image, mib, &dir.join("again"))?;
    let name = trace.file_name().ok_or_else(|| FaultError::TraceName {
        trace: trace.clone(),
    })?;
    let on_disk = Sensor::open(&again.path.join("data").join(name).join("cam"))?.len()?;
    Ok(Figures {
        acked,
        on_disk,
        alarm_delay_ms,
        rss_peak,
    })
}

/// A child killed on drop (an error path must not leave a daemon behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (30 s at most) until the daemon records; its trace directory.
fn ready(control: &Path, child: &mut Child, log: &Path) -> Result<PathBuf> {
    let t0 = Instant::now();
    loop {
        if UnixStream::connect(control).is_ok() {
            if let Ok(st) = ctl(control, json!({"cmd": "status"})) {
                if let Some(d) = st["trace_dir"].as_str() {
                    return Ok(PathBuf::from(d));
                }
            }
        }
        if let Some(status) = child.try_wait().map_err(DaemonError::Wait)? {
            return Err(DaemonError::ExitedAtStart {
                status,
                log: log.to_path_buf(),
                log_text: std::fs::read_to_string(log).unwrap_or_default(),
            }
            .into());
        }
        if t0.elapsed() > READY_WITHIN {
            return Err(DaemonError::NotReady {
                within_s: READY_WITHIN.as_secs(),
                recording: true,
            }
            .into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first `disk_error` alarm's delay after its fault (10 s at most, else `None`).
fn alarm_delay(control: &Path) -> Result<Option<f64>> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        let st: Value = ctl(control, json!({"cmd": "status"}))?;
        let alarm = st["alarms"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["alarm"] == "disk_error").cloned());
        let at = st["disk"]["errors"]
            .as_array()
            .and_then(|e| e.iter().filter_map(|f| f["at"].as_f64()).reduce(f64::min));
        if let (Some(a), Some(at)) = (alarm, at) {
            return Ok(a["start"].as_f64().map(|s| (s - at) * 1000.0));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(None)
}

/// `EXT4_IOC_SHUTDOWN` with `EXT4_GOING_FLAGS_NOLOGFLUSH` on the filesystem holding `fs`.
fn shut_down(fs: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    const EXT4_IOC_SHUTDOWN: libc::c_ulong = 0x8004_587D;
    let dir = std::fs::File::open(fs).map_err(|e| RunError::io("opening", fs, e))?;
    let flags: u32 = 2;
    // SAFETY: a valid descriptor and a pointer to a u32, as the ioctl takes.
    if unsafe { libc::ioctl(dir.as_raw_fd(), EXT4_IOC_SHUTDOWN, &flags) } != 0 {
        return Err(FaultError::Shutdown {
            fs: fs.to_path_buf(),
            error: std::io::Error::last_os_error(),
        }
        .into());
    }
    Ok(())
}

/// `VmHWM` of `pid`, bytes.
fn peak_rss(pid: u32) -> Result<u64> {
    let status = PathBuf::from(format!("/proc/{pid}/status"));
    let s = std::fs::read_to_string(&status).map_err(|e| RunError::io("reading", &status, e))?;
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or(FaultError::NoHwm { pid })?;
    Ok(kb << 10)
}
