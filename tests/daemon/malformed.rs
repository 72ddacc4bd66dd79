//! Malformed and hostile clients: each gets a clear error (or a clean end), the daemon's
//! memory stays bounded, and the other sensors do not notice. (Bad hellos and bad frame
//! lengths one by one are in `ingest.rs`; this is what is left of issue 3's list.)

use crate::support::daemon;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_core::format::{SensorMeta, SensorWriter, WriterOptions};
use serde_json::json;

/// A sensor writing all along, checked at the end: it must not notice anything.
struct Steady {
    c: Driver,
    sent: u64,
}

impl Steady {
    fn new(d: &TestDaemon) -> Steady {
        let (c, r) = d.connect(&raw_hello("steady", 4));
        assert_eq!(r["ok"], true, "{r}");
        Steady { c, sent: 0 }
    }

    fn tick(&mut self) {
        for _ in 0..10 {
            self.c
                .send(&frame(self.sent as f64, None, &[(&[7; 4], false)]));
            self.sent += 1;
        }
        assert_eq!(self.c.sync(), self.sent);
    }
}

fn rss_kib(d: &TestDaemon) -> u64 {
    let pid = d.child.as_ref().unwrap().id();
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn hostile_clients_get_clear_errors_and_others_keep_writing() {
    let d = TestDaemon::start(json!({"max_frame_bytes": 1 << 20, "hello_timeout_ms": 4000}));
    let mut steady = Steady::new(&d);
    steady.tick();
    let rss0 = rss_kib(&d);

    // Slowloris: a hello that never finishes is closed after the hello timeout, with an error.
    let mut slow = UnixStream::connect(d.ingest_path()).unwrap();
    slow.write_all(br#"{"roverlog": 1, "sens"#).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let t0 = Instant::now();

    // Meanwhile: a frame announcing 4 GiB is refused before any of it is buffered.
    let (mut big, r) = d.connect(&raw_hello("big", 4));
    assert_eq!(r["ok"], true);
    big.send(&u32::MAX.to_le_bytes());
    let e = big.read_reply();
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("over max_frame_bytes"),
        "{e}"
    );
    // A frame just under the limit, sent only in part and then abandoned: the connection
    // holds at most one frame's bytes.
    let (mut part, r) = d.connect(&raw_hello("part", 4));
    assert_eq!(r["ok"], true);
    for i in 0..2 {
        part.send(&frame(i as f64, None, &[(&[1; 4], false)]));
    }
    let whole = frame(2.0, None, &[(&[1; 4], false)]);
    part.send(&whole[..7]);
    drop(part);
    // A hello whose frames can never fit under max_frame_bytes is refused at once.
    let hello = json!({"roverlog": 1, "sensor": "wide", "channels":
        [{"name": "x", "format": "raw", "type": "u1", "shape": [2 << 20]}]});
    let (_w, r) = d.connect(&hello);
    assert_eq!(r["ok"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("over max_frame_bytes"),
        "{r}"
    );
    // Invalid UTF-8 in the sensor name: not JSON.
    let (_u, r) = Driver::connect_raw(
        &d.ingest_path(),
        b"{\"roverlog\": 1, \"sensor\": \"\xff\xfe\", \"channels\": []}\n",
    );
    assert_eq!(r["ok"], false);
    assert!(
        r["error"].as_str().unwrap().contains("not valid JSON"),
        "{r}"
    );
    steady.tick();

    let mut reply = String::new();
    slow.read_to_string(&mut reply).unwrap();
    let waited = t0.elapsed();
    assert!(reply.contains("no hello within 4s"), "{reply:?}");
    assert!(
        waited >= Duration::from_millis(3900) && waited < Duration::from_secs(20),
        "{waited:?}"
    );
    steady.tick();

    // The abandoned frame cost its sensor that frame only.
    let (mut again, r) = d.connect(&raw_hello("part", 4));
    assert_eq!(r["samples"], 2, "{r}");
    assert_eq!(again.sync(), 2);
    let ev = events(&d.trace_dir());
    assert!(
        ev.iter().any(
            |e| matches!(&e.event, Event::PartialFrame { sensor, bytes: 7, .. } if sensor == "part")
        ),
        "{ev:?}"
    );
    let st = d.status();
    assert!(st["sensors"]["steady"]["failed"].is_null(), "{st}");
    assert_eq!(st["sensors"]["steady"]["samples"], steady.sent);
    // Nothing above allocated anything like the 4 GiB announced (generous bound: 64 MiB).
    let rss1 = rss_kib(&d);
    assert!(
        rss1 < rss0 + (64 << 10),
        "RSS grew from {rss0} to {rss1} KiB"
    );
}

#[test]
fn symbolic_links_under_data_root_are_not_followed() {
    // Outside data_root: a sensor directory, and a crashed-looking trace, both of which the
    // daemon would write into (or cut) if it followed a link to them.
    let outside = tempfile::tempdir().unwrap();
    let meta = SensorMeta::parse(
        br#"{"ts": {"format": "raw", "type": "f8", "shape": [], "desc": ""},
             "x": {"format": "raw", "type": "u1", "shape": [4], "desc": "test"}}"#,
        std::path::Path::new("meta.json"),
    )
    .unwrap();
    let victim = outside.path().join("victim");
    let mut w = SensorWriter::create(&victim, meta.clone(), &WriterOptions::default()).unwrap();
    w.append(1.0, &[&[9; 4]]).unwrap();
    w.finish().unwrap();
    std::fs::write(victim.join("x"), [9u8; 6]).unwrap(); // a torn tail recovery would cut
    let crashed = outside.path().join("trace");
    std::fs::create_dir_all(crashed.join("_roverlog")).unwrap();
    std::fs::write(
        crashed.join("_roverlog/events.jsonl"),
        "{\"t\": 1, \"event\": \"start\"}\n",
    )
    .unwrap();
    let mut w2 = SensorWriter::create(&crashed.join("s"), meta, &WriterOptions::default()).unwrap();
    w2.append(1.0, &[&[9; 4]]).unwrap();
    w2.finish().unwrap();
    std::fs::write(crashed.join("s/x"), [9u8; 6]).unwrap();

    let mut d = TestDaemon::create(json!({}));
    std::fs::create_dir_all(d.data_root()).unwrap();
    // Sorts after any real trace name, so it would be "the newest trace".
    std::os::unix::fs::symlink(&crashed, d.data_root().join("9999.12.31-23.59.59")).unwrap();
    d.spawn();
    let trace = d.trace_dir();
    assert_ne!(trace.file_name().unwrap(), "9999.12.31-23.59.59");
    assert_eq!(std::fs::read(crashed.join("s/x")).unwrap(), [9u8; 6]);
    assert_eq!(
        std::fs::read_to_string(crashed.join("_roverlog/events.jsonl")).unwrap(),
        "{\"t\": 1, \"event\": \"start\"}\n"
    );

    // A sensor directory that is a link: refused with an error naming it.
    std::os::unix::fs::symlink(&victim, trace.join("victim")).unwrap();
    let (_c, r) = d.connect(&raw_hello("victim", 4));
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("symbolic link"),
        "{r}"
    );
    assert_eq!(std::fs::read(victim.join("x")).unwrap(), [9u8; 6]);
    assert_eq!(std::fs::read(victim.join("ts")).unwrap().len(), 8);
    // Other sensors are unaffected.
    let (mut ok, r) = d.connect(&raw_hello("fine", 4));
    assert_eq!(r["ok"], true, "{r}");
    ok.send(&frame(1.0, None, &[(&[1; 4], false)]));
    assert_eq!(ok.sync(), 1);
}

fn open_fds(d: &TestDaemon) -> usize {
    let pid = d.child.as_ref().unwrap().id();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Thousands of connections that never say hello: beyond `max_sensors` + 16 they are refused at
/// once with "too many connections"; the daemon's memory and descriptors stay bounded, a
/// running sensor does not notice, and once they go away a new sensor connects.
#[test]
fn thousands_of_idle_connections_are_bounded_and_refused_clearly() {
    let d = TestDaemon::start(json!({"max_sensors": 8}));
    let mut steady = Steady::new(&d);
    steady.tick();
    let (rss0, fds0) = (rss_kib(&d), open_fds(&d));
    let conns: Vec<UnixStream> = (0..2000)
        .map(|_| UnixStream::connect(d.ingest_path()).unwrap())
        .collect();
    // Refusals are answered at once; give the daemon time to answer all, then sort: a
    // connection with a reply was refused, one without is held waiting for its hello.
    std::thread::sleep(Duration::from_secs(2));
    let (mut idle, mut refused) = (Vec::new(), 0);
    for mut s in conns {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 256];
        match s.read(&mut buf) {
            Ok(n) if n > 0 => {
                let line = String::from_utf8_lossy(&buf[..n]);
                assert!(line.contains("too many connections"), "{line}");
                refused += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => idle.push(s),
            other => panic!("neither refused nor held: {other:?}"),
        }
    }
    // One permit is the steady sensor's: max_sensors + 16 - 1 idle connections fit.
    assert_eq!(idle.len(), 8 + 16 - 1, "idle connections held");
    assert_eq!(refused, 2000 - idle.len());
    steady.tick();
    let (rss1, fds1) = (rss_kib(&d), open_fds(&d));
    assert!(
        rss1 < rss0 + (32 << 10),
        "RSS grew from {rss0} to {rss1} KiB"
    );
    assert!(
        fds1 <= fds0 + idle.len() + 4,
        "descriptors grew from {fds0} to {fds1}"
    );
    drop(idle);
    // The slots free up as the daemon sees the connections close.
    let t0 = Instant::now();
    loop {
        let (mut c, r) = d.connect(&raw_hello("late", 4));
        if r["ok"] == true {
            c.send(&frame(1.0, None, &[(&[1; 4], false)]));
            assert_eq!(c.sync(), 1);
            break;
        }
        assert!(
            r["error"]
                .as_str()
                .unwrap_or_default()
                .contains("too many connections"),
            "{r}"
        );
        assert!(t0.elapsed() < Duration::from_secs(10), "slots never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    steady.tick();
    assert!(d.status()["sensors"]["steady"]["failed"].is_null());
}

#[test]
fn a_control_connection_over_the_limit_gets_an_error_reply_not_a_silent_close() {
    let d = TestDaemon::start(json!({}));
    // Idle control connections (a hung script, a leaking monitor) take every slot; the
    // daemon accepts them in order, so these 16 hold the slots before the next one.
    let idle: Vec<UnixStream> = (0..16)
        .map(|_| UnixStream::connect(d.control_path()).unwrap())
        .collect();
    let mut s = UnixStream::connect(d.control_path()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The daemon may answer and close before the request is written (a broken pipe here,
    // as `roverlog ctl` also allows for): the reply line is what matters.
    let _ = s.write_all(b"{\"cmd\": \"status\"}\n");
    let mut reply = String::new();
    // A silent close may also show as a reset: the reply line is what matters.
    let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(s), &mut reply);
    let r: serde_json::Value = serde_json::from_str(&reply)
        .unwrap_or_else(|e| panic!("no JSON reply line ({e}): {reply:?}"));
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("too many control connections"),
        "{r}"
    );
    drop(idle);
}
