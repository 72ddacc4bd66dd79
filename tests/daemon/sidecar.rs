//! Sidecar files through the real daemon (docs/protocol.md 2.6): a driver's hello carries
//! files for its sensor's directory (an Ouster lidar's `lidar.json`); the daemon writes them
//! byte for byte, durably, before the sensor's `meta.json`, into every trace the connection's
//! samples go to; bad names and oversized files are refused naming them, losing nothing else;
//! a resumed sensor with another file is refused and the first kept.

use crate::support::daemon;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_client::{Driver as ClientDriver, HelloFlags, SidecarFile};
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
use serde_json::{json, Value};

/// A `lidar.json`-like text (non-ASCII, escapes, no final newline) and a binary file.
fn lidar_json() -> Vec<u8> {
    let mut t = r#"{"lidar_data_format": {"columns_per_frame": 1024, "pixels_per_column": 64},
  "beam_altitude_angles": [16.61, 16.06, -15.9], "prod_sn": "992211000123", "note": "µ\n	"}"#
        .as_bytes()
        .to_vec();
    t.extend(std::iter::repeat_n(b' ', 3000));
    t
}

fn calibration() -> Vec<u8> {
    (0..=255u8).chain([b'\n', 0, b'\n']).collect()
}

/// The hello of sensor `lidar` (one raw channel `x` of 16 bytes, one `lzmaf` channel `z`)
/// declaring `files`, followed by their bytes.
fn hello_with(files: &[(&str, &[u8])]) -> Vec<u8> {
    let decl: Vec<Value> = files
        .iter()
        .map(|(n, b)| json!({"name": n, "bytes": b.len()}))
        .collect();
    let hello = json!({"roverlog": 1, "sensor": "lidar", "files": decl, "channels": [
        {"name": "x", "format": "raw", "type": "u1", "shape": [16]},
        {"name": "z", "format": "lzmaf", "type": "u1", "shape": [64]}]});
    let mut bytes = serde_json::to_vec(&hello).unwrap();
    bytes.push(b'\n');
    for (_, b) in files {
        bytes.extend_from_slice(b);
    }
    bytes
}

/// A hello's files: name and bytes.
type Files<'a> = Vec<(&'a str, &'a [u8])>;

fn send(c: &mut Driver, i: u64) {
    c.send(&frame(
        i as f64,
        None,
        &[(&sample(1, i, 16), false), (&sample(2, i, 64), false)],
    ));
}

fn assert_samples(trace: &Path, from: u64, n: u64) {
    let (ts, x) = read_sensor(trace, "lidar", "x");
    assert_eq!(ts.len() as u64, n, "{}", trace.display());
    for (k, v) in x.iter().enumerate() {
        assert_eq!(*v, sample(1, from + k as u64, 16), "sample {k}");
    }
}

#[test]
fn sidecar_files_land_byte_identical_in_every_trace_the_connection_records() {
    let mut d = TestDaemon::start(json!({}));
    let (lidar, cal) = (lidar_json(), calibration());
    let (mut c, r) = Driver::connect_raw(
        &d.ingest_path(),
        &hello_with(&[("lidar.json", &lidar), ("cal.bin", &cal)]),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["files"], true, "the reply says they were taken: {r}");
    let first = d.trace_dir();
    for i in 0..50 {
        send(&mut c, i);
    }
    assert_eq!(c.sync(), 50);
    // A rotation moves the live connection to a new trace: its files go there too.
    let rotated = d.ctl(json!({"cmd": "rotate"}));
    assert_eq!(rotated["ok"], true, "{rotated}");
    for i in 50..80 {
        send(&mut c, i);
    }
    assert_eq!(c.sync(), 30);
    let second = d.trace_dir();
    assert_ne!(first, second);
    // As do a stop and a start while it lives.
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], true);
    assert_eq!(d.ctl(json!({"cmd": "start", "label": "again"}))["ok"], true);
    send(&mut c, 80);
    assert_eq!(c.sync(), 1);
    let third = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());

    for (trace, from, n) in [(&first, 0, 50), (&second, 50, 30), (&third, 80, 1)] {
        let dir = trace.join("lidar");
        assert_eq!(
            std::fs::read(dir.join("lidar.json")).unwrap(),
            lidar,
            "{}",
            dir.display()
        );
        assert_eq!(
            std::fs::read(dir.join("cal.bin")).unwrap(),
            cal,
            "{}",
            dir.display()
        );
        // No temporary file left, and the sensor checks (the files are not channels).
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with("..tmp")), "{names:?}");
        assert_samples(trace, from, n);
    }
}

/// The client library's hello: `Driver::connect_full` sends the files and learns that the
/// daemon took them.
#[test]
fn the_client_library_sends_files_and_learns_they_were_taken() {
    let mut d = TestDaemon::start(json!({}));
    let meta = SensorMeta {
        channels: vec![(
            "x".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![4], ""),
        )],
    };
    let files = [SidecarFile::new("lidar.json", lidar_json())];
    let (mut c, reply) = ClientDriver::connect_full(
        &d.ingest_path(),
        "lidar",
        &meta,
        HelloFlags::default(),
        &files,
    )
    .unwrap();
    assert!(reply.files && c.files_sent());
    c.send(1.0, None, &[&[1, 2, 3, 4]]).unwrap();
    assert_eq!(c.sync().unwrap(), 1);
    let trace = d.trace_dir();
    assert!(d.stop().success());
    assert_eq!(
        std::fs::read(trace.join("lidar/lidar.json")).unwrap(),
        lidar_json()
    );
}

/// `meta.json` is written after the sidecars: a kill -9 at any point of the hello never
/// leaves a sensor directory with `meta.json` and without its whole `lidar.json`; right after
/// the hello reply both are there; and the restarted daemon resumes the sensor with them.
#[test]
fn a_kill9_during_or_right_after_the_hello_never_leaves_meta_json_without_the_sidecar() {
    let lidar = lidar_json();
    let hello = hello_with(&[("lidar.json", &lidar)]);
    let mut d = TestDaemon::start(json!({}));
    // What each early kill found: (meta.json, lidar.json) present.
    let mut found = Vec::new();
    // Kills at growing delays after the hello's bytes went out, then one after the reply.
    const ROUNDS: u64 = 9;
    for round in 0..ROUNDS {
        let trace = d.trace_dir();
        let mut s = std::os::unix::net::UnixStream::connect(d.ingest_path()).unwrap();
        s.write_all(&hello).unwrap();
        if round < ROUNDS - 1 {
            std::thread::sleep(Duration::from_micros((1 << round) * 250 - 250));
        } else {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(&s), &mut line).unwrap();
            assert!(line.contains("\"ok\":true"), "{line}");
        }
        d.kill9();
        let dir = trace.join("lidar");
        let meta = dir.join("meta.json").exists();
        let side = std::fs::read(dir.join("lidar.json")).ok();
        if round < ROUNDS - 1 {
            found.push((meta, side.is_some()));
        }
        if meta || round == ROUNDS - 1 {
            assert!(meta, "round {round}: the reply came after meta.json");
            assert_eq!(side.as_deref(), Some(&lidar[..]), "round {round}");
        } else {
            // Without meta.json the sidecar may be missing or whole, never torn.
            assert!(
                side.is_none() || side.as_deref() == Some(&lidar[..]),
                "round {round}"
            );
        }
        d.spawn();
        assert_eq!(d.trace_dir(), trace, "the restart resumes the trace");
    }
    // The resumed daemon takes the sensor back with the same file and keeps it whole.
    let trace = d.trace_dir();
    let (mut c, r) = Driver::connect_raw(&d.ingest_path(), &hello);
    assert_eq!(r["ok"], true, "{r}\n{}", d.log());
    for i in 0..5 {
        send(&mut c, i);
    }
    assert_eq!(c.sync(), 5);
    assert!(d.stop().success(), "{}", d.log());
    assert_eq!(
        std::fs::read(trace.join("lidar/lidar.json")).unwrap(),
        lidar
    );
    assert_samples(&trace, 0, 5);
    eprintln!("early kills found (meta.json, lidar.json): {found:?}");
}

/// Each bad declaration is refused with an error line naming the file, before any of its
/// bytes are read; the sensor streaming meanwhile loses nothing, and the refused sensor's
/// directory is not created.
#[test]
fn bad_names_and_oversized_files_are_refused_naming_them_and_nothing_else_is_lost() {
    let mut d = TestDaemon::start(json!({}));
    let (mut a, _) = d.connect(&raw_hello("a", 32));
    for i in 0..100 {
        a.send(&frame(i as f64, None, &[(&sample(3, i, 32), false)]));
    }
    assert_eq!(a.sync(), 100);
    let trace = d.trace_dir();
    let big = vec![b'x'; (1 << 20) + 1];
    let cases: Vec<(Files, &str)> = vec![
        (
            vec![("../lidar.json", b"{}")],
            "hello: invalid file name \"../lidar.json\": contains a path separator",
        ),
        (
            vec![("..", b"{}")],
            "hello: invalid file name \"..\": contains '..' or is '.'",
        ),
        (
            vec![("meta.json", b"{}")],
            "hello: invalid file name \"meta.json\": is reserved (meta.json)",
        ),
        (
            vec![(".durable", b"{}")],
            "hello: invalid file name \".durable\": starts with '.' (names starting with '.' are the daemon's own)",
        ),
        (
            vec![("lidar.json", b"{}"), ("lidar.json", b"{}")],
            "hello: file \"lidar.json\" is declared twice",
        ),
        (
            vec![("lidar.json", &big)],
            "hello: the files hold 1048577 bytes, over the limit of 1048576",
        ),
        (
            vec![("z_i", b"{}")],
            "sensor \"lidar\": file \"z_i\" is the name of one of its channel files",
        ),
        (
            vec![("x", b"{}")],
            "sensor \"lidar\": file \"x\" is the name of one of its channel files",
        ),
        (
            vec![("ts", b"{}")],
            "sensor \"lidar\": file \"ts\" is the name of one of its channel files",
        ),
    ];
    for (files, want) in cases {
        // The oversized one gets the hello line alone: a refused declaration is answered
        // before any of its bytes are read.
        let bytes = hello_with(&files);
        let line_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        let total: usize = files.iter().map(|f| f.1.len()).sum();
        let sent = if total > 64 << 10 {
            &bytes[..line_end]
        } else {
            &bytes[..]
        };
        let (mut c, r) = Driver::connect_raw(&d.ingest_path(), sent);
        assert_eq!(r["ok"], false, "{r}");
        assert_eq!(r["error"], want);
        assert_eq!(c.read_to_end(), "", "closed after the error line");
    }
    // Files announced but cut short by the driver's close.
    let bytes = hello_with(&[("lidar.json", &[b'{'; 100])]);
    let mut s = std::os::unix::net::UnixStream::connect(d.ingest_path()).unwrap();
    s.write_all(&bytes[..bytes.len() - 90]).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut line = String::new();
    std::io::Read::read_to_string(&mut s, &mut line).unwrap();
    let r: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(
        r["error"],
        "connection closed after 10 of the 100 bytes of the hello's files"
    );

    assert!(
        !trace.join("lidar").exists(),
        "a refused hello creates nothing"
    );
    for i in 100..120 {
        a.send(&frame(i as f64, None, &[(&sample(3, i, 32), false)]));
    }
    assert_eq!(a.sync(), 120, "the streaming sensor lost nothing");
    assert!(d.stop().success(), "{}", d.log());
    let (ts, x) = read_sensor(&trace, "a", "x");
    assert_eq!(ts.len(), 120);
    assert!(x
        .iter()
        .enumerate()
        .all(|(i, v)| *v == sample(3, i as u64, 32)));
}

/// A sensor that comes back in the same trace with another `lidar.json` (live, or after a
/// crash and restart) is refused naming the file; the first file and every sample stay, and
/// the same file is taken back.
#[test]
fn a_resumed_sensor_with_another_sidecar_is_refused_and_the_first_kept() {
    let mut d = TestDaemon::start(json!({"fsync_interval_ms": 50}));
    let (a, b) = (lidar_json(), b"{\"other\": \"calibration\"}".to_vec());
    let (mut c, r) = Driver::connect_raw(&d.ingest_path(), &hello_with(&[("lidar.json", &a)]));
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..20 {
        send(&mut c, i);
    }
    assert_eq!(c.sync(), 20);
    drop(c);
    let trace = d.trace_dir();
    let dir = trace.join("lidar");
    let refused = |d: &TestDaemon, when: &str| {
        let t0 = Instant::now();
        loop {
            let (_, r) = Driver::connect_raw(&d.ingest_path(), &hello_with(&[("lidar.json", &b)]));
            let e = r["error"].as_str().unwrap_or_default().to_string();
            if e.contains("already has a live connection") && t0.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            assert_eq!(r["ok"], false, "{when}: {r}");
            assert!(
                e.contains(&format!(
                    "file \"lidar.json\" differs from the one in {} ({} bytes sent, {} there)",
                    dir.display(),
                    b.len(),
                    a.len()
                )),
                "{when}: {e}"
            );
            return;
        }
    };
    refused(&d, "live");
    assert_eq!(std::fs::read(dir.join("lidar.json")).unwrap(), a);
    let (mut c, r) = Driver::connect_raw(&d.ingest_path(), &hello_with(&[("lidar.json", &a)]));
    assert_eq!(
        (r["ok"].clone(), r["samples"].clone()),
        (json!(true), json!(20)),
        "{r}"
    );
    for i in 20..30 {
        send(&mut c, i);
    }
    assert_eq!(c.sync(), 30);
    drop(c);

    d.kill9();
    d.spawn();
    assert_eq!(d.trace_dir(), trace);
    refused(&d, "after a restart");
    let (mut c, r) = Driver::connect_raw(&d.ingest_path(), &hello_with(&[("lidar.json", &a)]));
    assert_eq!(r["ok"], true, "{r}\n{}", d.log());
    assert_eq!(r["samples"], 30);
    send(&mut c, 30);
    assert_eq!(c.sync(), 31);
    assert!(d.stop().success(), "{}", d.log());
    assert_eq!(std::fs::read(dir.join("lidar.json")).unwrap(), a);
    assert_samples(&trace, 0, 31);
}
