//! A slow disk under the real daemon process (issue 39, docs/disk-failure.md "A slow disk"):
//! its writes throttled with cgroup v1 blkio on a loop-mounted ext4 while more arrives than
//! it writes. Needs root (mount, loop devices, `/sys/fs/cgroup/blkio`); fails naming what is
//! missing, never skips.

use crate::disk_fault::{imu_frames, Conn};
use crate::support::common::mount::Mounted;
use crate::support::daemon;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use daemon::*;
use serde_json::json;

/// A blkio cgroup (cgroup v1, `blkio.throttle.write_bps_device`) that throttles writes to
/// one block device; its members' fsync and `sync_file_range` writeback goes at that rate.
/// Removed (its members moved back to the root) on drop.
struct Throttle {
    dir: PathBuf,
}

impl Throttle {
    /// Puts `pid` in a new cgroup throttled to `bps` bytes/s on the device holding `fs`.
    fn new(pid: u32, fs: &Path, bps: u64) -> Throttle {
        let root = Path::new("/sys/fs/cgroup/blkio");
        assert!(
            root.join("blkio.throttle.write_bps_device").exists(),
            "this test throttles a loop device with cgroup v1 blkio, which this machine lacks \
             ({} is missing)",
            root.display()
        );
        let out = Command::new("findmnt")
            .args(["-n", "-o", "MAJ:MIN", "--target"])
            .arg(fs)
            .output()
            .expect("findmnt (util-linux)");
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!dev.is_empty(), "no device for {}", fs.display());
        let dir = root.join(format!("roverlog-test-{pid}"));
        std::fs::create_dir_all(&dir).unwrap();
        let t = Throttle { dir };
        std::fs::write(
            t.dir.join("blkio.throttle.write_bps_device"),
            format!("{dev} {bps}"),
        )
        .unwrap();
        // Every thread of the daemon (cgroup.procs moves the whole process).
        std::fs::write(t.dir.join("cgroup.procs"), pid.to_string()).unwrap();
        t
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let root = Path::new("/sys/fs/cgroup/blkio/cgroup.procs");
        if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for p in procs.lines() {
                let _ = std::fs::write(root, p);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The daemon's peak resident memory (`VmHWM`), bytes.
fn peak_rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb << 10
}

/// A slow disk: writes throttled to 1 MiB/s while `cam` sends 5 MiB/s with `queue_policy`
/// `drop`. Memory stays bounded (peak RSS under 256 MiB), every frame is either in the trace
/// or counted as dropped (exactly), and `imu`, which keeps sending, raises no `silent`.
#[test]
fn a_slow_disk_drops_exactly_what_the_queue_policy_says_in_bounded_memory() {
    let images = tempfile::tempdir().unwrap();
    let mnt = Mounted::ext4_loop(&images.path().join("slow.img"), 128);
    let mut d = TestDaemon::start(json!({
        "data_root": mnt.path().join("data"),
        "queue_policy": "drop",
        "queue_bytes": 4 << 20,
        "max_frame_bytes": 1 << 20,
        "fsync_interval_ms": 200,
        "sensors": {"imu": {"expected_hz": 100.0}},
    }));
    let pid = d.child.as_ref().unwrap().id();
    let _throttle = Throttle::new(pid, mnt.path(), 1 << 20);
    let trace = d.trace_dir();
    const BIG: usize = 64 << 10;
    let (mut cam, r) = Conn::open(&d, &raw_hello("cam", BIG));
    assert_eq!(r["ok"], true, "{r}");
    let (mut imu, r) = Conn::open(&d, &raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");
    // 4 s: cam 80 frames/s of 64 KiB (5 MiB/s), imu 100 frames/s, in 10 ms steps.
    let t0 = Instant::now();
    let (mut sent, mut imu_sent) = (0u64, 0u64);
    for step in 0..400u64 {
        let due = t0 + Duration::from_millis(step * 10);
        if let Some(w) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
        let frames = (step + 1) * 8 / 10 - sent;
        for i in sent..sent + frames {
            cam.stream
                .write_all(&frame(i as f64, None, &[(&sample(1, i, BIG), false)]))
                .unwrap();
        }
        sent += frames;
        imu.stream.write_all(&imu_frames(imu_sent, 1)).unwrap();
        imu_sent += 1;
    }
    let elapsed = t0.elapsed();
    let sending_ended = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // Everything the writer took is made durable (slowly): the count is exact.
    let r = cam.send_and_sync(&[]).unwrap();
    let durable = r["durable"].as_u64().unwrap();
    let r = imu.send_and_sync(&[]).unwrap();
    assert_eq!(r["durable"], imu_sent, "{r}");
    let st = d.status();
    let drops = st["sensors"]["cam"]["drops"].as_u64().unwrap();
    assert!(
        drops > 0,
        "a 1 MiB/s disk kept up with 5 MiB/s in {elapsed:?}: {st}"
    );
    assert_eq!(durable + drops, sent, "{st}");
    let rss = peak_rss(pid);
    assert!(rss < 256 << 20, "peak RSS {} MiB", rss >> 20);
    drop((cam, imu));
    assert!(d.stop().success(), "{}", d.log());
    let (ts, _) = read_sensor(&trace, "cam", "x");
    assert_eq!(ts.len() as u64, durable);
    let ev = events(&trace);
    let dropped: u64 = ev
        .iter()
        .filter_map(|e| match &e.event {
            Event::Drop { sensor, count, .. } if sensor == "cam" => Some(*count),
            _ => None,
        })
        .sum();
    assert_eq!(dropped, drops, "the drop events count every dropped frame");
    // (imu is silent, truly, while the test waits for cam's last fsync.)
    assert!(
        !ev.iter()
            .any(|e| matches!(&e.event, Event::Alarm { alarm, start, .. }
            if alarm == "silent" && *start < sending_ended)),
        "a sensor that kept sending was called silent: {ev:?}"
    );
    eprintln!(
        "slow disk: {sent} frames sent in {elapsed:?}, {durable} written, {drops} dropped, peak RSS {} MiB",
        rss >> 20
    );
}
