//! A failing disk under the real daemon process (issue 39, docs/disk-failure.md): an fsync
//! that fails with EIO (libfiu's `fiu-run`/`fiu-ctrl` on the unmodified binary), a real
//! ENOSPC on a small loop-mounted ext4, and the ext4 shutdown ioctl on a loop mount (a USB
//! disk pulled out). Each asserts what the driver was told, what `status`
//! and `events.jsonl` say, and what a reader finds on disk afterwards.
//!
//! A slow disk is `disk_slow.rs`.
//!
//! They need root (mount, loop devices) and `fiu-run` (Debian `fiu-utils`, installed by
//! `scripts/test`); they fail naming what is missing, never skip.

use crate::support::common::mount::Mounted;
use crate::support::daemon;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_bench::lidar::lidar_frame;
use roverlog_core::format::lzma;
use serde_json::{json, Value};

const X: usize = 4000;

fn cam_hello() -> Value {
    raw_hello("cam", X)
}

fn cam_frames(from: u64, n: u64) -> Vec<u8> {
    (from..from + n)
        .flat_map(|i| frame(i as f64, None, &[(&sample(1, i, X), false)]))
        .collect()
}

pub(crate) fn imu_frames(from: u64, n: u64) -> Vec<u8> {
    (from..from + n)
        .flat_map(|i| frame(i as f64, None, &[(&sample(3, i, 16), false)]))
        .collect()
}

/// A driver whose I/O errors are results: the daemon closes a failed sensor's connection.
pub(crate) struct Conn {
    pub(crate) stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Conn {
    pub(crate) fn open(d: &TestDaemon, hello: &Value) -> (Conn, Value) {
        let t0 = Instant::now();
        loop {
            let stream = UnixStream::connect(d.ingest_path()).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let mut c = Conn {
                reader: BufReader::new(stream.try_clone().unwrap()),
                stream,
            };
            let mut l = serde_json::to_vec(hello).unwrap();
            l.push(b'\n');
            c.stream.write_all(&l).unwrap();
            let r = c.reply().expect("hello reply");
            // The old connection of a failed sensor may still be detaching.
            let busy = r["error"]
                .as_str()
                .is_some_and(|e| e.contains("live connection"));
            if !busy || t0.elapsed() > Duration::from_secs(10) {
                return (c, r);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn reply(&mut self) -> Option<Value> {
        let mut l = String::new();
        match self.reader.read_line(&mut l) {
            Ok(n) if n > 0 => Some(serde_json::from_str(&l).unwrap()),
            _ => None,
        }
    }

    /// Sends `frames` and a durability request: the reply, or `None` when the daemon closed.
    pub(crate) fn send_and_sync(&mut self, frames: &[u8]) -> Option<Value> {
        self.stream.write_all(frames).ok()?;
        self.stream.write_all(&0u32.to_le_bytes()).ok()?;
        self.reply()
    }
}

/// `cam`'s samples in `trace` as a reader finds them: every one byte-identical to what was
/// sent; returns the count.
fn cam_on_disk(trace: &Path) -> u64 {
    let (ts, x) = read_sensor(trace, "cam", "x");
    for (i, (t, v)) in ts.iter().zip(&x).enumerate() {
        assert_eq!(*t, i as f64, "cam ts[{i}]");
        assert_eq!(*v, sample(1, i as u64, X), "cam x[{i}]");
    }
    ts.len() as u64
}

/// Waits (at most 10 s, then fails naming `what`) until an event line of `trace` holds.
fn wait_event(trace: &Path, what: &str, ok: impl Fn(&Event) -> bool) {
    let t0 = Instant::now();
    loop {
        let ev = events(trace);
        if ev.iter().any(|e| ok(&e.event)) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{what}: {ev:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The active `disk_error` alarm of `sensor` in `st`, if any.
fn disk_alarm<'a>(st: &'a Value, sensor: &str) -> Option<&'a Value> {
    st["alarms"]
        .as_array()?
        .iter()
        .find(|a| a["alarm"] == "disk_error" && a["sensor"] == sensor)
}

/// Runs `fiu-ctrl -c command pid` (the daemon runs under `fiu-run -x`).
fn fiu_ctrl(pid: u32, command: &str) {
    let out = Command::new("fiu-ctrl")
        .args(["-c", command])
        .arg(pid.to_string())
        .output()
        .expect("running fiu-ctrl: install Debian fiu-utils (scripts/test does)");
    assert!(
        out.status.success(),
        "fiu-ctrl -c {command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A daemon started under `fiu-run -x`, so `fiu-ctrl` can make its libc calls fail.
fn start_under_fiu(extra: Value) -> TestDaemon {
    let mut d = TestDaemon::create(extra);
    let mut cmd = Command::new("fiu-run");
    cmd.arg("-x")
        .arg(env!("CARGO_BIN_EXE_roverlog"))
        .args(["daemon", "--config"])
        .arg(&d.config);
    assert!(
        Command::new("fiu-run").arg("-h").output().is_ok(),
        "fiu-run is missing: install Debian fiu-utils (scripts/test does)"
    );
    d.spawn_cmd(cmd);
    d
}

/// One fdatasync fails with EIO on `cam`: its driver gets the error, `disk_error` is raised
/// within a second naming the file and the error (status, events.jsonl, alarm_command),
/// `cam` is cut back to its last good fsync and a reconnect resumes there (never
/// acknowledging what the failed fsync covered), `imu` keeps recording, and SIGTERM exits 1.
#[test]
fn an_fsync_error_loses_nothing_acknowledged_and_alarms_within_a_second() {
    let alarms = tempfile::tempdir().unwrap();
    let alarm_file = alarms.path().join("alarms.jsonl");
    let script = format!("cat >> {}", alarm_file.display());
    let d = start_under_fiu(json!({
        "fsync": "on_request",
        "alarm_command": ["sh", "-c", script],
    }));
    let mut d = d;
    let trace = d.trace_dir();
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let (mut imu, r) = Conn::open(&d, &raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");
    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    let r = imu.send_and_sync(&imu_frames(0, 5)).unwrap();
    assert_eq!(r["durable"], 5, "{r}");

    // Ten more samples reach the kernel; the fsync that would cover them fails once.
    cam.stream.write_all(&cam_frames(10, 10)).unwrap();
    fiu_ctrl(
        d.child.as_ref().unwrap().id(),
        "enable name=posix/io/sync/fdatasync,failinfo=5,onetime",
    );
    let r = cam.send_and_sync(&[]);
    let told = format!("{r:?}");
    assert!(
        told.contains("Input/output error") && r.as_ref().is_some_and(|r| r["ok"] == false),
        "the driver must be told the fsync failed: {told}"
    );
    // ... and what survives: the count of the last good fsync, in which trace.
    let r = r.unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    assert_eq!(
        r["trace"].as_str(),
        trace.file_name().unwrap().to_str(),
        "{r}"
    );

    // disk_error, naming the file and the error, within a second of the failure.
    let st = d.wait_status("disk_error for cam", |st| disk_alarm(st, "cam").is_some());
    let alarm = disk_alarm(&st, "cam").unwrap().clone();
    let fault = st["disk"]["errors"][0].clone();
    assert_eq!(fault["sensor"], "cam", "{st}");
    assert_eq!(fault["durable"], 10, "{st}");
    let delay = alarm["start"].as_f64().unwrap() - fault["at"].as_f64().unwrap();
    assert!(delay < 1.0, "alarm {delay:.3} s after the failure: {st}");
    assert!(
        alarm["file"].as_str().is_some_and(|f| f.contains("cam"))
            && alarm["error"]
                .as_str()
                .is_some_and(|e| e.contains("Input/output error"))
            && alarm["what"] == "fsync",
        "{alarm}"
    );
    assert_eq!(
        st["recording"], true,
        "the disk answers, the others record: {st}"
    );

    // The other sensor keeps recording.
    let r = imu.send_and_sync(&imu_frames(5, 5)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");

    // The reader finds cam cut back to its last good fsync: never what the fsync covered.
    assert_eq!(cam_on_disk(&trace), 10);
    let ev = events(&trace);
    assert!(
        ev.iter()
            .any(|e| matches!(&e.event, Event::Alarm { alarm, sensor, .. }
            if alarm == "disk_error" && sensor == "cam")),
        "{ev:?}"
    );
    assert!(
        ev.iter().any(|e| matches!(&e.event, Event::Recovered { sensor, len: 10, cuts, .. }
            if sensor == "cam" && cuts.iter().any(|c| c.contains("failed after the last good fsync")))),
        "{ev:?}"
    );

    // A reconnect resumes at the durable count; resending from there records again.
    drop(cam);
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 10, "{r}");
    let r = cam.send_and_sync(&cam_frames(10, 10)).unwrap();
    assert_eq!(r["durable"], 20, "{r}");
    assert_eq!(cam_on_disk(&trace), 20);
    let st = d.wait_status("disk_error clears", |st| disk_alarm(st, "cam").is_none());
    assert_eq!(st["disk"]["errors"], json!([]), "{st}");

    // alarm_command was given the alarm with its file and error.
    let t0 = Instant::now();
    let got = loop {
        let got = std::fs::read_to_string(&alarm_file).unwrap_or_default();
        if got.contains("disk_error") || t0.elapsed() > Duration::from_secs(10) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let raised: Value = got
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|a| a["alarm"] == "disk_error" && a["state"] == "raised")
        .unwrap_or_else(|| panic!("alarm_command output: {got}"));
    assert!(
        raised["error"]
            .as_str()
            .is_some_and(|e| e.contains("Input/output error")),
        "{raised}"
    );

    // Not a clean run: SIGTERM exits 1, so systemd restarts it, and the log says why.
    let status = d.stop();
    assert_eq!(status.code(), Some(1), "{}", d.log());
    assert!(d.log().contains("the data disk failed"), "{}", d.log());
}

/// The compression pool and the fsync rule together: an `lzmaf` sensor compressed on 4 pool
/// threads whose fsync fails is told the count of its last good fsync, and a reader finds
/// exactly those frames, each the bytes a fresh encoder makes, and nothing the failed fsync
/// covered (frames that were compressing or appended since are not kept).
#[test]
fn an_fsync_error_on_a_pooled_lzmaf_sensor_keeps_exactly_the_acknowledged_frames() {
    let mut d = start_under_fiu(json!({
        "fsync": "on_request", "compress_threads": 4, "lzmaf_store_above": 1.0,
    }));
    let trace = d.trace_dir();
    let hello = json!({"roverlog": 1, "sensor": "lid", "channels": [
        {"name": "rng", "format": "lzmaf", "type": "u2", "shape": [32, 256], "desc": "test"}]});
    let (mut lid, r) = Conn::open(&d, &hello);
    assert_eq!(r["ok"], true, "{r}");
    let images: Vec<Vec<u8>> = (0..20).map(|i| lidar_frame(32, 256, i).rng).collect();
    let wire = |from: usize, to: usize| -> Vec<u8> {
        (from..to)
            .flat_map(|i| frame(i as f64, None, &[(&images[i], false)]))
            .collect()
    };
    let r = lid.send_and_sync(&wire(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");

    // Ten more frames go into the pool; the fsync that would cover them fails once.
    lid.stream.write_all(&wire(10, 20)).unwrap();
    fiu_ctrl(
        d.child.as_ref().unwrap().id(),
        "enable name=posix/io/sync/fdatasync,failinfo=5,onetime",
    );
    let r = lid
        .send_and_sync(&[])
        .expect("the daemon's reply to the failed sync");
    assert_eq!(
        r["ok"], false,
        "the driver must be told the fsync failed: {r}"
    );
    assert_eq!(r["durable"], 10, "{r}");
    wait_event(
        &trace,
        "lid recovered to 10",
        |e| matches!(e, Event::Recovered { sensor, len: 10, .. } if sensor == "lid"),
    );

    let want: Vec<u8> = images[..10]
        .iter()
        .flat_map(|f| lzma::compress(f, lzma::DEFAULT_PRESET))
        .collect();
    let got = std::fs::read(trace.join("lid/rng")).unwrap();
    assert!(
        got == want,
        "lid/rng: {} bytes on disk, the 10 acknowledged frames are {}",
        got.len(),
        want.len()
    );
    let ts = std::fs::read(trace.join("lid/ts")).unwrap();
    assert_eq!(
        ts.len(),
        10 * 8,
        "lid/ts holds the 10 acknowledged timestamps"
    );

    let status = d.stop();
    assert_eq!(status.code(), Some(1), "{}", d.log());
}

/// `roverlog ctl status` (text) holds every line of `wants`.
fn assert_ctl_status_says(d: &TestDaemon, wants: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["ctl", "--socket"])
        .arg(d.control_path())
        .arg("status")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for want in wants {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
}

/// `EXT4_IOC_SHUTDOWN` (`_IOR('X', 125, __u32)`, the same number as XFS_IOC_GOINGDOWN) with
/// `EXT4_GOING_FLAGS_NOLOGFLUSH`: the filesystem refuses every I/O from now on, as when its
/// USB disk is pulled out.
fn shut_down(fs: &Path) {
    use std::os::fd::AsRawFd;
    const EXT4_IOC_SHUTDOWN: libc::c_ulong = 0x8004_587D;
    let dir = std::fs::File::open(fs).unwrap();
    let flags: u32 = 2;
    // SAFETY: a valid descriptor and a pointer to a u32, as the ioctl takes.
    let r = unsafe { libc::ioctl(dir.as_raw_fd(), EXT4_IOC_SHUTDOWN, &flags) };
    assert_eq!(
        r,
        0,
        "EXT4_IOC_SHUTDOWN on {}: {}",
        fs.display(),
        std::io::Error::last_os_error()
    );
}

/// The data filesystem is shut down under the daemon: it does not hang, stops recording
/// with `stopped_reason` naming the error, raises `disk_error`, keeps its control socket and
/// dashboard answering, and records again by itself once a filesystem is mounted on the
/// same path; SIGTERM then exits 1. Every sample acknowledged durable before the shutdown is
/// on the old disk when it is mounted again.
#[test]
fn a_disk_shut_down_under_the_daemon_stops_loudly_and_recording_resumes_on_a_remount() {
    let images = tempfile::tempdir().unwrap();
    let (old, new) = (images.path().join("old.img"), images.path().join("new.img"));
    let mnt = Mounted::ext4_loop(&old, 32);
    let root = mnt.path().join("data");
    let (mut d, url) = http::start_with_dashboard(json!({
        "data_root": root,
        "min_free_bytes": 0,
        "resume_free_bytes": 0,
        "disk_check_interval_ms": 100,
        "sensors": {"gps": {"expected_hz": 5.0}},
    }));
    let first = d.trace_dir();
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let (mut imu, r) = Conn::open(&d, &raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");
    let r = cam.send_and_sync(&cam_frames(0, 20)).unwrap();
    assert_eq!(r["durable"], 20, "{r}");
    let r = imu.send_and_sync(&imu_frames(0, 5)).unwrap();
    assert_eq!(r["durable"], 5, "{r}");

    shut_down(mnt.path());
    let t0 = Instant::now();
    let r = cam.send_and_sync(&cam_frames(20, 10));
    assert!(
        r.as_ref().is_none_or(|r| r["ok"] == false),
        "nothing is acknowledged on a shut-down disk: {r:?}"
    );
    let st = d.wait_status("recording stops", |st| st["recording"] == false);
    let why = st["stopped_reason"].as_str().unwrap_or_default().to_owned();
    assert!(
        why.contains("disk error") && why.contains("Input/output error"),
        "{st}"
    );
    d.wait_status("disk_error", |st| disk_alarm(st, "cam").is_some());
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "{:?} to stop and alarm",
        t0.elapsed()
    );
    // `start` on the dead disk is refused and says why; it does not end the wait for a
    // usable disk (recording resumes by itself below).
    let r = d.ctl(json!({"cmd": "start"}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("Input/output error")),
        "{r}"
    );
    // The dashboard answers and shows it too.
    let (code, body) = http::get_json(&format!("{url}/api/status"), Some(http::TOKEN));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["recording"], false, "{body}");
    assert!(disk_alarm(&body, "cam").is_some(), "{body}");
    // The other sensor's files failed too when the stop finished them: its connection is
    // closed with the error (or before the driver's write got through), and a reconnect is
    // accepted with no trace and the reason.
    let r = imu.send_and_sync(&imu_frames(5, 5));
    assert!(
        r.as_ref().is_none_or(|r| r["ok"] == false
            && r["error"]
                .as_str()
                .is_some_and(|e| e.contains("imu") && e.contains("Input/output error"))),
        "{r:?}"
    );
    drop(imu);
    let (mut imu, r) = Conn::open(&d, &raw_hello("imu", 16));
    assert_eq!(r["trace"], Value::Null, "{r}");
    assert!(
        r["stopped_reason"]
            .as_str()
            .is_some_and(|s| s.contains("disk error")),
        "{r}"
    );
    let r = imu.send_and_sync(&imu_frames(0, 5)).unwrap();
    assert_eq!(r["recording"], false, "{r}");
    // Its failure stays shown (the alarm and `disk.errors`) though the sensor reconnected.
    let st = d.status();
    assert!(disk_alarm(&st, "imu").is_some(), "{st}");
    // `ctl status` text says it all: the disk errors, the absent sensor, the discarded frames.
    assert_ctl_status_says(
        &d,
        &[
            "ALARM DISK_ERROR cam",
            "not recording",
            "stopped: disk error",
            "DISK ERROR cam: fsync of ",
            "DISK ERROR imu: finish of ",
            "absent: gps, expected at 5 Hz",
            "5 frames discarded while not recording",
        ],
    );

    // A filesystem on the same path again (the disk replaced): recording resumes by itself.
    let mnt = Mounted::ext4_loop_at(&new, 32, mnt.unmount());
    // Until the data root is there, nothing is recorded onto the bare mount point (the root
    // filesystem) or the fresh disk.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(d.status()["recording"], false);
    assert!(!root.exists());
    std::fs::create_dir(&root).unwrap();
    let st = d.wait_status("recording resumes", |st| st["recording"] == true);
    // (It may have the old trace's name: a new disk, a timestamp to the second.)
    let second = PathBuf::from(st["trace_dir"].as_str().unwrap());
    wait_event(
        &second,
        "the new trace's start",
        |e| matches!(e, Event::Start { reason, .. } if reason == "disk usable again"),
    );
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 0, "{r}");
    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    assert_eq!(cam_on_disk(&second), 10);
    let st = d.wait_status("disk_error clears", |st| disk_alarm(st, "cam").is_none());
    assert_eq!(st["stopped_reason"], Value::Null, "{st}");

    drop((cam, imu));
    let status = d.stop();
    assert_eq!(status.code(), Some(1), "{}", d.log());
    drop(mnt);

    // The old disk, mounted again: everything acknowledged before the shutdown is there.
    let again = Mounted::loop_at(&old, tempfile::tempdir().unwrap());
    let first_again = again.path().join("data").join(first.file_name().unwrap());
    assert!(cam_on_disk(&first_again) >= 20);
}

/// A real ENOSPC on a small ext4 (not only the free-space guard): the failing sensor's
/// driver learns it, recording stops with "disk full", the trace reads back up to its last
/// durable sample, and recording resumes by itself once space is freed.
#[test]
fn a_full_ext4_stops_recording_keeps_every_durable_sample_and_resumes_when_space_is_freed() {
    let images = tempfile::tempdir().unwrap();
    let mnt = Mounted::ext4_loop(&images.path().join("small.img"), 8);
    // Leave about 2 MiB for the trace.
    let free = roverlog_daemon::disk::free_bytes(mnt.path()).unwrap();
    std::fs::write(
        mnt.path().join("ballast"),
        vec![0xA5u8; (free - (2 << 20)) as usize],
    )
    .unwrap();
    let mut d = TestDaemon::start(json!({
        "data_root": mnt.path().join("data"),
        "min_free_bytes": 0,
        "resume_free_bytes": 1 << 20,
        "disk_check_interval_ms": 100,
        // Alarms looked at once a second: the full disk stops the trace before the tick that
        // raises `disk_error`, which then finds no trace open.
        "health_interval_ms": 1000,
    }));
    let first = d.trace_dir();
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let (mut sent, mut durable) = (0u64, 0u64);
    let told = loop {
        match cam.send_and_sync(&cam_frames(sent, 20)) {
            Some(r) if r["ok"] == true && r["recording"] == true => {
                durable = r["durable"].as_u64().unwrap();
                sent += 20;
            }
            other => break format!("{other:?}"),
        }
        assert!(sent < 4000, "the disk never filled");
    };
    assert!(told.contains("No space left on device"), "{told}");
    let st = d.wait_status("recording stops", |st| st["recording"] == false);
    assert!(
        st["stopped_reason"]
            .as_str()
            .is_some_and(|s| s.contains("disk full")),
        "{st}"
    );
    assert!(
        disk_alarm(&st, "cam").is_some() || !st["disk"]["errors"].as_array().unwrap().is_empty(),
        "{st}"
    );
    // The alarm raised after the stop still reaches events.jsonl: that of the trace its file
    // was in (issue 39; it reached only status and alarm_command).
    wait_event(
        &first,
        "disk_error in the stopped trace's events",
        |e| matches!(e, Event::Alarm { alarm, sensor, .. } if alarm == "disk_error" && sensor == "cam"),
    );
    // Exactly the durable samples: the ones written after the last good fsync were cut.
    assert_eq!(cam_on_disk(&first), durable);
    assert!(durable > 0);

    // Space freed: a new trace starts by itself.
    std::fs::remove_file(mnt.path().join("ballast")).unwrap();
    let st = d.wait_status("recording resumes", |st| st["recording"] == true);
    assert_ne!(PathBuf::from(st["trace_dir"].as_str().unwrap()), first);
    drop(cam);
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["samples"], 0, "{r}");
    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    drop(cam);
    assert_eq!(d.stop().code(), Some(1), "{}", d.log());
    assert_eq!(cam_on_disk(&first), durable);
}

/// A `ResilientDriver` (the Rust and Python drivers, `replay`) rides out a failed fsync: it
/// reconnects, is resumed at the durable count and resends from there, so the trace holds
/// every sample once, in order, though the fsync that covered some of them failed.
#[test]
fn a_resilient_driver_resends_what_a_failed_fsync_lost() {
    use roverlog_client::{ResilientDriver, ResilientOptions};
    use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
    let d = start_under_fiu(json!({"fsync": "on_request", "receive_timestamps": false}));
    let trace = d.trace_dir();
    let meta = SensorMeta {
        channels: vec![(
            "x".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![X], ""),
        )],
    };
    let opts = ResilientOptions {
        max_bytes: 64 << 10,
        ..Default::default()
    };
    let mut drv = ResilientDriver::connect(&d.ingest_path(), "cam", meta, false, &opts).unwrap();
    let n = 300u64;
    for i in 0..n {
        if i == 100 {
            assert_eq!(drv.sync().unwrap(), 100);
        }
        if i == 200 {
            fiu_ctrl(
                d.child.as_ref().unwrap().id(),
                "enable name=posix/io/sync/fdatasync,failinfo=5,onetime",
            );
        }
        drv.send(i as f64, None, &[&sample(1, i, X)]).unwrap();
    }
    assert_eq!(drv.sync().unwrap(), n, "{}", d.log());
    assert_eq!(cam_on_disk(&trace), n);
    // The alarm is raised though the fault was over at once (the driver reconnected).
    wait_event(
        &trace,
        "disk_error",
        |e| matches!(e, Event::Alarm { alarm, .. } if alarm == "disk_error"),
    );
}

/// The live Foxglove feed gets `disk_error` as a `foxglove.Log` at `ERROR` on
/// `/roverlog/events`, naming the file and the error, like every other alarm surface.
#[test]
fn a_failed_fsync_reaches_the_foxglove_feed_as_an_error_log() {
    use crate::foxglove::{advertised, connect};
    use crate::foxglove_log::{logs, read_until, ERROR};
    let d = start_under_fiu(json!({"fsync": "on_request", "foxglove_listen": "127.0.0.1:0"}));
    let url = d.wait_status("status has foxglove.url", |st| {
        st["foxglove"]["url"].is_string()
    })["foxglove"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let mut ws = connect(&url);
    let chans = advertised(&mut ws, &["/roverlog/events"]);
    // (Subscription 2: what `logs` reads.)
    let sub = json!({"op": "subscribe", "subscriptions": [
        {"id": 2, "channelId": chans["/roverlog/events"]["id"]}]});
    ws.send(tungstenite::Message::text(sub.to_string()))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let is_disk_error = |l: &foxglove::messages::Log| l.message.contains("alarm disk_error raised");
    let reader = std::thread::spawn(move || {
        read_until(&mut ws, |got| {
            logs(got).iter().any(|(_, l)| is_disk_error(l))
        })
    });

    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    fiu_ctrl(
        d.child.as_ref().unwrap().id(),
        "enable name=posix/io/sync/fdatasync,failinfo=5,onetime",
    );
    let r = cam.send_and_sync(&cam_frames(10, 10)).unwrap();
    assert_eq!(r["ok"], false, "{r}");
    let got = reader.join().unwrap();
    let (_, log) = logs(&got)
        .into_iter()
        .find(|(_, l)| is_disk_error(l))
        .unwrap();
    assert_eq!(log.level, ERROR, "{log:?}");
    assert!(
        log.message.contains("cam/x") && log.message.contains("Input/output error"),
        "{log:?}"
    );
}
