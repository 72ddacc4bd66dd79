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

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use roverlog_client::Driver;
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, Sensor, SensorMeta};

use super::child::{ctl, make_work_dir};
use super::{progress, Options};

const SCENARIOS: [&str; 3] = ["fsync_eio", "enospc", "shutdown"];
/// Bytes of one sample (one raw channel).
const SAMPLE: usize = 4000;

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
            std::fs::create_dir_all(&dir)?;
            progress(&format!("faults: {scenario}, round {}", round + 1));
            let f =
                run_round(scenario, &dir).with_context(|| format!("{scenario} round {round}"))?;
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
            std::fs::File::create(image)?.set_len(mib << 20)?;
            sh(Command::new("mkfs.ext4")
                .args(["-q", "-F", "-m", "0"])
                .arg(image))?;
        }
        std::fs::create_dir_all(path)?;
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
    let out = cmd.output().with_context(|| {
        format!("running {cmd:?} (roverlog bench --only faults needs root, mkfs.ext4, fiu-utils)")
    })?;
    if !out.status.success() {
        bail!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
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
    std::fs::write(
        &cfg,
        serde_json::to_vec_pretty(&json!({
            "data_root": data, "ingest_socket": ingest, "control_socket": control,
            "min_free_bytes": 0, "resume_free_bytes": u64::MAX / 2, "fsync": "on_request",
            "disk_check_interval_ms": 100, "shutdown_deadline_ms": 60000,
        }))?,
    )?;
    let exe = std::env::current_exe()?;
    let mut cmd = if scenario == "fsync_eio" {
        let mut c = Command::new("fiu-run");
        c.arg("-x").arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    cmd.args(["daemon", "--config"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("daemon.log"))?);
    let mut child = Killed(
        cmd.spawn()
            .context("starting the daemon (fiu-run: Debian fiu-utils)")?,
    );
    let trace = ready(&control, &mut child.0)?;
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
        acked = send(&mut drv, 20).context("recording before the fault")?;
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
        if t0.elapsed() > Duration::from_secs(60) {
            bail!("the fault never showed");
        }
    }
    drop(drv);
    let alarm_delay_ms = alarm_delay(&control)?;
    let rss_peak = peak_rss(pid)?;
    // SIGTERM, then read the trace from the image mounted again.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    while child.0.try_wait()?.is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            bail!("the daemon did not stop within 60 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(mnt);
    let again = LoopMount::new(&image, mib, &dir.join("again"))?;
    let name = trace.file_name().context("trace name")?;
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
fn ready(control: &Path, child: &mut Child) -> Result<PathBuf> {
    let t0 = Instant::now();
    loop {
        if UnixStream::connect(control).is_ok() {
            if let Ok(st) = ctl(control, json!({"cmd": "status"})) {
                if let Some(d) = st["trace_dir"].as_str() {
                    return Ok(PathBuf::from(d));
                }
            }
        }
        if let Some(s) = child.try_wait()? {
            bail!("the daemon exited at start: {s}");
        }
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("the daemon did not record within 30 s");
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
    let dir = std::fs::File::open(fs)?;
    let flags: u32 = 2;
    // SAFETY: a valid descriptor and a pointer to a u32, as the ioctl takes.
    if unsafe { libc::ioctl(dir.as_raw_fd(), EXT4_IOC_SHUTDOWN, &flags) } != 0 {
        bail!(
            "EXT4_IOC_SHUTDOWN on {}: {}",
            fs.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// `VmHWM` of `pid`, bytes.
fn peak_rss(pid: u32) -> Result<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("VmHWM")?;
    Ok(kb << 10)
}
