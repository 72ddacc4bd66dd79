//! `roverlog bench --only camera`: the V4L2 camera driver's CPU at 1080p and 60 fps (issue
//! 37's target: at most 5% of a core), against the upstream collector's way in the same run.
//!
//! 60 distinct 1920x1080 JPEGs are encoded once by ffmpeg (`testsrc2` with temporal noise,
//! about 300-450 KB each, as a webcam's MJPG at that size); then `roverlog driver camera
//! replay:DIR --fps 60` replays them for `--rig-seconds` (default 10; 2 with `--quick`) into
//! a real daemon, through the same buffer handling a `/dev/videoN` takes (the replay copies
//! each file into its buffer, which the kernel does for a device: the figure errs high).
//! The driver's CPU (user + system, its own `getrusage` through `wait4`, start-up and the
//! final durability wait included) per second of video is the figure. The baseline is what
//! upstream's collector does with each frame: ffmpeg decoding the same JPEGs and encoding them
//! again as MJPEG (`-f null`), its CPU per frame times 60. Every frame must be durable and
//! in the daemon's count, or the run fails.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::child::{ctl, make_work_dir, write_config, DaemonChild};
use super::error::{current_exe, CommandError, Result, RunError};
use super::{finish, load_average, progress, Options};

const FPS: u32 = 60;
/// Distinct frames (one second of video), replayed in a loop.
const FRAMES: u32 = 60;
/// The target: the driver's CPU seconds per second of 1080p60 video.
const TARGET: f64 = 0.05;

/// A child's CPU seconds (user + system) and wall seconds, and whether it exited `want`.
struct Ran {
    cpu_s: f64,
    wall_s: f64,
    code: Option<i32>,
}

/// Runs `cmd` (stderr to `log`) and waits at most `limit`; its own CPU time from `wait4`.
fn run(mut cmd: Command, what: &str, log: &Path, limit: Duration) -> Result<Ran> {
    let start = Instant::now();
    let err = std::fs::File::create(log).map_err(|e| RunError::io("creating", log, e))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|error| CommandError::Start {
            command: what.to_string(),
            error,
        })?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid out-value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for our own child, valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 {
            return Err(CommandError::Wait {
                command: what.to_string(),
                error: std::io::Error::last_os_error(),
            }
            .into());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CommandError::TimedOut {
                command: what.to_string(),
                limit,
                log: log.to_path_buf(),
            }
            .into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(Ran {
        cpu_s: tv(usage.ru_utime) + tv(usage.ru_stime),
        wall_s: start.elapsed().as_secs_f64(),
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
    })
}

fn ffmpeg() -> Command {
    let mut c = Command::new("ffmpeg");
    c.args(["-hide_banner", "-loglevel", "error", "-nostdin"]);
    c
}

/// `FRAMES` 1080p JPEGs in `dir` (f001.jpg ...), ffmpeg's; their total size.
fn encode_frames(dir: &Path) -> Result<u64> {
    std::fs::create_dir_all(dir).map_err(|e| RunError::io("creating", dir, e))?;
    let command = "ffmpeg (scripts/test installs it) encoding the frames";
    let st = ffmpeg()
        .args(["-f", "lavfi", "-i"])
        .arg(format!(
            "testsrc2=size=1920x1080:rate={FPS}:duration={}",
            f64::from(FRAMES) / f64::from(FPS)
        ))
        .args(["-vf", "noise=alls=8:allf=t", "-c:v", "mjpeg", "-q:v", "4"])
        .args(["-f", "image2"])
        .arg(dir.join("f%03d.jpg"))
        .status()
        .map_err(|error| CommandError::Start {
            command: command.to_string(),
            error,
        })?;
    if !st.success() {
        return Err(CommandError::Failed {
            command: command.to_string(),
            status: st,
            stderr: String::new(),
        }
        .into());
    }
    let reading = |e| RunError::io("reading", dir, e);
    let mut total = 0;
    for e in std::fs::read_dir(dir).map_err(reading)? {
        total += e.map_err(reading)?.metadata().map_err(reading)?.len();
    }
    Ok(total)
}

/// `--only camera` (see the module doc).
pub(super) fn alone(args: &Options) -> Result<bool> {
    let seconds = args
        .rig_seconds
        .unwrap_or(if args.quick { 2.0 } else { 10.0 });
    let loops = (seconds.max(1.0)).round() as u64;
    let work = make_work_dir(args.dir.as_deref())?;
    let frames_dir = work.join("frames");
    progress("camera: ffmpeg encoding 60 frames of 1920x1080");
    let bytes = encode_frames(&frames_dir)?;
    let sent = loops * u64::from(FRAMES);
    let exe = current_exe()?;

    let (cfg, cfg_path) = write_config(&work, "camera", args.daemon_config.as_deref())?;
    let mut daemon = DaemonChild::start(&cfg, &cfg_path, &work, "camera")?;
    progress(&format!(
        "camera: the driver replaying {sent} frames at {FPS} fps"
    ));
    let mut cmd = Command::new(&exe);
    cmd.args(["driver", "camera"])
        .arg(format!("replay:{}", frames_dir.display()))
        .args(["--fps", &FPS.to_string(), "--loops", &loops.to_string()])
        .arg("--socket")
        .arg(&cfg.sockets.ingest);
    let log = work.join("driver.log");
    let limit = Duration::from_secs_f64(loops as f64 * 3.0 + 60.0);
    let driver = run(cmd, "roverlog driver camera", &log, limit)?;
    let driver_log = std::fs::read_to_string(&log).unwrap_or_default();
    let stored = ctl(&cfg.sockets.control, json!({"cmd": "status"}))?["sensors"]["camera"]
        ["samples"]
        .as_u64()
        .unwrap_or(0);
    let daemon_exit = daemon.stop()?;

    progress("camera: ffmpeg decoding and encoding the same frames (the baseline)");
    let mut cmd = ffmpeg();
    cmd.args(["-stream_loop", "1", "-framerate", &FPS.to_string()])
        .args(["-f", "image2", "-i"])
        .arg(frames_dir.join("f%03d.jpg"))
        .args(["-c:v", "mjpeg", "-q:v", "4", "-f", "null", "-"]);
    let base = run(
        cmd,
        "ffmpeg decode+encode",
        &work.join("ffmpeg.log"),
        Duration::from_secs(600),
    )?;
    let base_frames = 2 * u64::from(FRAMES);

    let durable = format!("{sent} of {sent} durable");
    let mut ok = true;
    // The replay's end is the source ending: exit 3, with every frame durable.
    if driver.code != Some(3) || !driver_log.contains(&durable) || stored != sent {
        println!(
            "FAIL: the driver exited {:?}, the daemon stored {stored} of {sent} frames; its log:\n{}",
            driver.code,
            driver_log.trim()
        );
        ok = false;
    }
    if daemon_exit != Some(0) {
        println!("FAIL: the daemon exited {daemon_exit:?} at SIGTERM");
        ok = false;
    }
    let video_s = sent as f64 / f64::from(FPS);
    let ours = driver.cpu_s / video_s;
    let theirs = base.cpu_s / base_frames as f64 * f64::from(FPS);
    if args.json {
        println!(
            "{}",
            json!({"scenario": "camera", "fps": FPS, "width": 1920, "height": 1080,
                   "frames": sent, "mean_frame_bytes": bytes / u64::from(FRAMES),
                   "driver_cpu_s": driver.cpu_s, "driver_wall_s": driver.wall_s,
                   "driver_cpu_per_s": ours, "target_cpu_per_s": TARGET,
                   "ffmpeg_cpu_s": base.cpu_s, "ffmpeg_frames": base_frames,
                   "ffmpeg_cpu_per_s": theirs, "ok": ok,
                   "load_average": load_average()})
        );
    } else {
        println!(
            "camera: 1920x1080 MJPG at {FPS} fps, {sent} frames of {:.0} KB mean, replayed into the daemon",
            bytes as f64 / f64::from(FRAMES) / 1e3
        );
        println!(
            "  driver (roverlog driver camera): {:.3} CPU-s per video second = {:.1}% of a core \
             (target <= {:.0}%: {}); {:.2} CPU-s over {:.1} s wall",
            ours,
            ours * 100.0,
            TARGET * 100.0,
            if ours <= TARGET { "met" } else { "MISSED" },
            driver.cpu_s,
            driver.wall_s
        );
        println!(
            "  baseline (ffmpeg decode + MJPEG encode, upstream's way): {:.3} CPU-s per video \
             second ({:.1} ms a frame, {base_frames} frames)",
            theirs,
            base.cpu_s / base_frames as f64 * 1e3
        );
        println!("  driver / baseline: {:.4}", ours / theirs.max(1e-9));
        println!(
            "  load average at the end: {}",
            load_average().unwrap_or_default()
        );
    }
    finish(&work, args.keep, ok);
    Ok(ok)
}
