//! The disk guard and ENOSPC, through the real daemon process on a small tmpfs that the test
//! mounts itself: recording stops cleanly (every sensor consistent, nothing reported durable
//! lost), status says why, the daemon stays up, and recording resumes after `start` once space
//! is freed.
//!
//! Also `direct_io` on a filesystem that refuses `O_DIRECT` (ramfs): the daemon falls back to
//! the page cache and writes the same bytes.
//!
//! These tests need to mount a tmpfs or ramfs (root, or CAP_SYS_ADMIN). They fail, never skip,
//! when they cannot: a skipped disk-full test is a disk-full path nobody has run.

use crate::support::common::mount::Mounted;
use crate::support::daemon;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_core::format::{check_sensor, Depth};
use serde_json::{json, Value};

/// Fills `path` with `bytes` of incompressible-enough data (tmpfs stores pages anyway).
fn ballast(path: &Path, bytes: usize) {
    std::fs::write(path, vec![0xA5u8; bytes]).unwrap();
}

/// A driver whose I/O errors are results, not panics: the daemon may close on it.
struct Conn {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Conn {
    fn open(d: &TestDaemon, hello: &Value) -> (Conn, Value) {
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
        (c, r)
    }

    fn reply(&mut self) -> Option<Value> {
        let mut l = String::new();
        match self.reader.read_line(&mut l) {
            Ok(n) if n > 0 => Some(serde_json::from_str(&l).unwrap()),
            _ => None,
        }
    }

    /// Sends `frames` then a durability request; the reply, or `None` when the connection
    /// broke (the daemon closed it).
    fn send_and_sync(&mut self, frames: &[u8]) -> Option<Value> {
        self.stream.write_all(frames).ok()?;
        self.stream.write_all(&0u32.to_le_bytes()).ok()?;
        self.reply()
    }

    /// The rest of what the daemon sent (its final error line), after it closed.
    fn rest(&mut self) -> String {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut self.reader, &mut s);
        s
    }
}

const X: usize = 4000;

/// Sensor `cam`: a raw channel and an lzmaf channel, so a torn tail can hit either format.
fn cam_hello() -> Value {
    json!({"roverlog": 1, "sensor": "cam", "channels": [
        {"name": "x", "format": "raw", "type": "u1", "shape": [X]},
        {"name": "z", "format": "lzmaf", "type": "u1", "shape": [256]}]})
}

fn cam_frames(from: u64, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in from..from + n {
        out.extend(frame(
            i as f64,
            None,
            &[(&sample(1, i, X), false), (&sample(2, i, 256), false)],
        ));
    }
    out
}

fn small_frames(from: u64, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in from..from + n {
        out.extend(frame(i as f64, None, &[(&sample(3, i, 16), false)]));
    }
    out
}

/// Every sensor of `trace` passes `check_sensor` (channels agree, no torn tail); `cam` holds
/// at least `durable` samples, each byte-identical to what was sent; returns its count.
fn verify_trace(trace: &Path, durable: u64) -> u64 {
    for e in std::fs::read_dir(trace).unwrap() {
        let p = e.unwrap().path();
        if p.join("meta.json").exists() {
            let c = check_sensor(&p, Depth::Deep).unwrap();
            assert!(c.is_ok(), "{}: {:?}", p.display(), c.all_problems());
        }
    }
    let (ts, x) = read_sensor(trace, "cam", "x");
    let (_, z) = read_sensor(trace, "cam", "z");
    let n = ts.len() as u64;
    assert!(
        n >= durable,
        "{n} samples on disk, but {durable} were reported durable"
    );
    for i in 0..n {
        assert_eq!(ts[i as usize], i as f64);
        assert_eq!(x[i as usize], sample(1, i, X), "x[{i}]");
        assert_eq!(z[i as usize], sample(2, i, 256), "z[{i}]");
    }
    n
}

fn assert_alive(d: &mut TestDaemon) {
    let c = d.child.as_mut().unwrap();
    assert!(c.try_wait().unwrap().is_none(), "daemon died:\n{}", d.log());
}

fn data_root(mnt: &Mounted) -> PathBuf {
    mnt.path().join("data")
}

#[test]
fn the_disk_guard_stops_recording_cleanly_and_start_resumes_after_space_is_freed() {
    let mnt = Mounted::tmpfs("8m");
    ballast(&mnt.path().join("ballast"), 3 << 20);
    let mut d = TestDaemon::start(json!({
        "data_root": data_root(&mnt),
        "min_free_bytes": 2 << 20,
        "disk_check_interval_ms": 50,
    }));
    let first = d.trace_dir();
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let (mut imu, r) = Conn::open(&d, &raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");

    // About 5 MiB free, the guard at 2 MiB: ~3 MiB of samples, 50 frames (200 KB) at a time.
    let (mut sent, mut durable) = (0u64, 0u64);
    let mut imu_sent = 0;
    loop {
        let r = cam.send_and_sync(&cam_frames(sent, 50)).expect("cam reply");
        assert_eq!(r["ok"], true, "{r}");
        sent += 50;
        let st = d.status();
        if st["recording"] == false {
            break;
        }
        // (A reply that raced the stop counts 0 in no trace; only trust it while recording.)
        durable = durable.max(r["durable"].as_u64().unwrap());
        let r = imu.send_and_sync(&small_frames(imu_sent, 5)).unwrap();
        assert_eq!(r["ok"], true, "{r}");
        imu_sent += 5;
        assert!(sent < 2000, "the guard never tripped: {st}");
    }
    let st = d.status();
    assert_eq!(st["recording"], false, "{st}");
    assert_eq!(st["disk"]["low"], true, "{st}");
    let why = st["stopped_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("disk low") && why.contains("min_free_bytes"),
        "{st}"
    );
    assert_alive(&mut d);

    // Every sensor stopped consistent, nothing durable lost, the stop says why.
    let kept = verify_trace(&first, durable);
    assert!(kept > 0);
    let ev = events(&first);
    assert!(
        ev.iter()
            .any(|e| matches!(&e.event, Event::Stop { reason, .. } if reason.contains("disk low"))),
        "{ev:?}"
    );

    // Drivers stay connected; what they send while not recording is discarded and counted,
    // and a durability request answers durable 0 with recording false (docs/protocol.md 5).
    let before = st["sensors"]["cam"]["discarded"].as_u64().unwrap();
    let r = cam.send_and_sync(&cam_frames(9000, 5)).unwrap();
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["durable"], 0, "{r}");
    assert_eq!(r["recording"], false, "{r}");
    assert_eq!(
        d.status()["sensors"]["cam"]["discarded"].as_u64().unwrap(),
        before + 5
    );

    // Still low: start is refused with the reason.
    let r = d.ctl(json!({"cmd": "start"}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("disk low"), "{r}");

    // Space freed: the guard clears, start opens a new trace, the same connections record.
    std::fs::remove_file(mnt.path().join("ballast")).unwrap();
    d.wait_status("disk.low clears", |st| st["disk"]["low"] == false);
    let r = d.ctl(json!({"cmd": "start"}));
    assert_eq!(r["ok"], true, "{r}");
    let second = d.trace_dir();
    assert_ne!(first, second);
    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    assert_eq!(verify_trace(&second, 10), 10);
    assert_eq!(d.status()["stopped_reason"], Value::Null);
    assert_alive(&mut d);
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn enospc_stops_recording_cleanly_loses_nothing_durable_and_start_resumes() {
    enospc_case(json!({}));
}

/// The same with `cam`'s raw channel written with `O_DIRECT` (ENOSPC then comes from a
/// direct write of whole blocks, or from the page-cache write of a partial one).
#[test]
fn enospc_with_direct_io_stops_recording_cleanly_and_loses_nothing_durable() {
    enospc_case(json!({"direct_io": true, "direct_io_min_sample_bytes": X}));
}

fn enospc_case(extra: Value) {
    let mnt = Mounted::tmpfs("8m");
    ballast(&mnt.path().join("ballast"), 2 << 20);
    let mut cfg = json!({
        "data_root": data_root(&mnt),
        "min_free_bytes": 0,
        "disk_check_interval_ms": 50,
    });
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let direct = extra["direct_io"] == true;
    let mut d = TestDaemon::start(cfg);
    let first = d.trace_dir();
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    // With direct_io the raw channel really is O_DIRECT (tmpfs supports it since Linux 6.6;
    // a fallback to the page cache would make this case test nothing new).
    assert_eq!(
        d.open_with_direct(&first.join("cam/x")).contains(&true),
        direct,
        "cam/x O_DIRECT"
    );
    let (mut imu, r) = Conn::open(&d, &raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");

    let (mut sent, mut durable) = (0u64, 0u64);
    let mut imu_sent = 0;
    let error = loop {
        match cam.send_and_sync(&cam_frames(sent, 20)) {
            // `imu` met the full disk first: recording stopped, and cam's reply says why (its
            // `durable` counts in no trace: the last one while recording stands).
            Some(r) if r["ok"] == true && r["recording"] == false => {
                break r["stopped_reason"].as_str().unwrap_or_default().to_owned();
            }
            Some(r) if r["ok"] == true => {
                durable = r["durable"].as_u64().unwrap();
                sent += 20;
            }
            Some(r) => break r.to_string(),
            None => break cam.rest(),
        }
        if let Some(r) = imu.send_and_sync(&small_frames(imu_sent, 5)) {
            if r["ok"] == true {
                imu_sent += 5;
            }
        }
        assert!(sent < 4000, "the disk never filled");
    };
    assert!(
        error.contains("No space left on device"),
        "the driver must learn why: {error:?}"
    );
    let st = d.wait_status("recording stops", |st| st["recording"] == false);
    let why = st["stopped_reason"].as_str().unwrap_or_default();
    assert!(why.contains("disk full"), "{st}");
    assert_alive(&mut d);

    // The torn tails were cut when the write failed: everything validates, nothing durable
    // is lost, and the trace is closed (a restart would not treat it as crashed).
    let kept = verify_trace(&first, durable);
    assert!(
        kept >= durable && kept <= sent + 20,
        "{kept} {durable} {sent}"
    );
    let ev = events(&first);
    assert!(
        ev.iter().any(|e| matches!(e.event, Event::Error { .. })),
        "{ev:?}"
    );

    // Free the ballast and start again: a reconnecting driver records into the new trace.
    std::fs::remove_file(mnt.path().join("ballast")).unwrap();
    let r = d.ctl(json!({"cmd": "start"}));
    assert_eq!(r["ok"], true, "{r}");
    let second = d.trace_dir();
    assert_ne!(first, second);
    drop(cam);
    let t0 = Instant::now();
    let mut cam = loop {
        // The old connection may still be detaching ("already has a live connection").
        let (c, r) = Conn::open(&d, &cam_hello());
        if r["ok"] == true {
            assert_eq!(r["samples"], 0, "{r}");
            break c;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{r}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    assert_eq!(verify_trace(&second, 10), 10);
    assert_alive(&mut d);
    // A write failed during the run: not a clean stop (exit 1, so a service manager
    // restarts the daemon and the journal says why).
    assert_eq!(d.stop().code(), Some(1), "{}", d.log());
    // After the stop, the first trace is still whole (the new trace did not touch it).
    assert_eq!(verify_trace(&first, durable), kept);
}

#[test]
fn direct_io_on_a_filesystem_without_o_direct_falls_back_and_writes_the_same_bytes() {
    use std::os::unix::fs::OpenOptionsExt;
    const BIG: usize = 70_001;
    let mnt = Mounted::mount_fs("ramfs", &[]);
    // The premise: this filesystem refuses O_DIRECT (else the test would prove nothing).
    let probe = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(mnt.path().join("probe"));
    assert!(probe.is_err(), "ramfs accepted O_DIRECT here");
    // ramfs reports no free space at all: no disk guard on it.
    let mut d = TestDaemon::start(json!({
        "data_root": data_root(&mnt), "min_free_bytes": 0,
        "direct_io": true, "direct_io_min_sample_bytes": 65536}));
    let (mut c, r) = d.connect(&raw_hello("cam", BIG));
    assert_eq!(r["ok"], true, "{r}");
    let trace = d.trace_dir();
    for i in 0..30 {
        c.send(&frame(i as f64, None, &[(&sample(1, i, BIG), false)]));
    }
    assert_eq!(c.sync(), 30);
    // Written through the page cache, and the log says why.
    assert_eq!(d.open_with_direct(&trace.join("cam").join("x")), [false]);
    let log = d.log();
    assert!(log.contains("refuses O_DIRECT"), "{log}");
    assert!(d.stop().success());

    let (ts, x) = read_sensor(&trace, "cam", "x");
    assert_eq!(ts.len(), 30);
    for i in 0..30 {
        assert_eq!(ts[i], i as f64);
        assert_eq!(x[i], sample(1, i as u64, BIG), "sample {i}");
    }
}

#[test]
fn autostart_on_a_read_only_data_root_says_why_in_status() {
    // E.g. a data disk mounted read-only, or ProtectSystem=strict without ReadWritePaths=.
    let mnt = Mounted::mount_fs("tmpfs", &["-o", "ro,size=1m"]);
    let d = TestDaemon::start(json!({"data_root": mnt.path()}));
    let st = d.status();
    assert_eq!(st["recording"], false, "{st}");
    assert!(
        st["stopped_reason"]
            .as_str()
            .is_some_and(|r| r.contains("Read-only file system")),
        "{st}"
    );
}

/// Fills the filesystem holding `dir` to its last byte (a file `fill` in `dir`).
fn fill_up(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("fill")).unwrap();
    for chunk in [1 << 16, 4096, 1] {
        let buf = vec![0xA5u8; chunk];
        while f.write_all(&buf).is_ok() {}
    }
}

/// Event lines written while the disk is full are kept, each whole: the log keeps space
/// reserved past its end, so the lines that report a full disk (the sensor's error, the
/// stop) and marks are written. Before, every line that needed a new block was lost (11 of
/// these 40 were kept), and the ENOSPC cases above lost their error event whenever it was
/// the line that crossed into a new page.
#[test]
fn event_lines_written_on_a_full_disk_are_kept_whole() {
    let mnt = Mounted::tmpfs("4m");
    let mut d = TestDaemon::start(json!({
        "data_root": data_root(&mnt),
        "min_free_bytes": 0,
        "disk_check_interval_ms": 50,
    }));
    let trace = d.trace_dir();
    fill_up(mnt.path());
    // 40 lines of ~330 bytes: more than any page the log already holds has room for.
    let text = "x".repeat(300);
    for i in 0..40 {
        let r = d.ctl(json!({"cmd": "mark", "text": format!("{i} {text}")}));
        assert_eq!(r["ok"], true, "mark {i}: {r}");
    }
    assert_alive(&mut d);
    assert!(d.stop().success(), "{}", d.log());
    let marks: Vec<String> = events(&trace)
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Mark { text } => Some(text),
            _ => None,
        })
        .collect();
    let want: Vec<String> = (0..40).map(|i| format!("{i} {text}")).collect();
    assert!(
        marks == want,
        "{} of the 40 marks kept, the first {} of them in order",
        marks.len(),
        marks.iter().zip(&want).take_while(|(a, b)| a == b).count()
    );
}

/// The disk guard's stop is not the end: once `resume_free_bytes` are free again the daemon
/// starts a new trace by itself (seen on a vehicle: it cleared its `disk_low` and discarded
/// frames until someone ran `ctl start`). The connected drivers record into it.
#[test]
fn after_the_disk_guard_stopped_recording_resumes_by_itself_when_space_is_back() {
    let mnt = Mounted::tmpfs("8m");
    ballast(&mnt.path().join("ballast"), 5 << 20);
    let d = TestDaemon::start(json!({
        "data_root": data_root(&mnt),
        "min_free_bytes": 2 << 20,
        "resume_free_bytes": 5 << 20,
        "disk_check_interval_ms": 50,
    }));
    // About 3 MiB free: recording stops as the driver fills 1 MiB more.
    let (mut cam, r) = Conn::open(&d, &cam_hello());
    assert_eq!(r["ok"], true, "{r}");
    let first = d.trace_dir();
    let mut sent = 0;
    while d.status()["recording"] == true {
        let r = cam.send_and_sync(&cam_frames(sent, 50)).expect("cam reply");
        assert_eq!(r["ok"], true, "{r}");
        sent += 50;
        assert!(sent < 2000, "the guard never tripped");
    }
    let st = d.status();
    assert!(
        st["stopped_reason"]
            .as_str()
            .is_some_and(|s| s.contains("disk low")),
        "{st}"
    );
    // Still under resume_free_bytes (with the trace's ~1 MiB): no start yet.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(d.status()["recording"], false);

    std::fs::remove_file(mnt.path().join("ballast")).unwrap();
    let st = d.wait_status("recording resumes", |st| st["recording"] == true);
    let second = PathBuf::from(st["trace_dir"].as_str().unwrap());
    assert_ne!(second, first);
    assert_eq!(st["stopped_reason"], Value::Null, "{st}");
    let r = cam.send_and_sync(&cam_frames(0, 10)).unwrap();
    assert_eq!(r["durable"], 10, "{r}");
    assert_eq!(verify_trace(&second, 10), 10);
    assert!(events(&second)
        .iter()
        .any(|e| matches!(&e.event, Event::Start { reason, .. } if reason == "disk usable again")));
}
