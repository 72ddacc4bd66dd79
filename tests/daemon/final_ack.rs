//! The opt-in hello fields of docs/protocol.md, through the real daemon and raw sockets:
//! `final_ack` (6.1: a clean shutdown tells the connection its final durable count before
//! it closes) and `dedup` (4.2: a frame repeating a sequence number and time already written
//! in the trace is dropped and counted). A hello without them sees exactly what it saw
//! before they existed.

use crate::support::daemon;

use std::time::{Duration, Instant};

use daemon::*;
use roverlog_core::format::events::Event;
use serde_json::{json, Value};

const T0: f64 = 1.7e9;

fn x(i: u64) -> Vec<u8> {
    sample(3, i, 4)
}

fn imu_frame(i: u64, seq: Option<u64>) -> Vec<u8> {
    frame(T0 + i as f64, seq, &[(&x(i), false)])
}

fn with(mut hello: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        hello[k] = v.clone();
    }
    hello
}

/// Connects, retrying while the daemon has not yet noticed the sensor's previous
/// connection closed (protocol.md 7); at most 10 s.
fn reconnect(d: &TestDaemon, hello: &Value) -> (Driver, Value) {
    let t0 = Instant::now();
    loop {
        let (c, r) = Driver::connect(&d.ingest_path(), hello);
        if r["ok"] == true {
            return (c, r);
        }
        let busy = r["error"]
            .as_str()
            .is_some_and(|e| e.contains("already has a live connection"));
        assert!(busy, "{r}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the old connection was not noticed closed within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn at_a_clean_shutdown_an_opted_in_connection_gets_its_final_count_and_an_old_one_eof() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let (mut old, r) = d.connect(&raw_hello("old", 4));
    assert_eq!(r["ok"], true, "{r}");
    let (mut new, r) = d.connect(&with(raw_hello("new", 4), json!({"final_ack": true})));
    assert_eq!(r["ok"], true, "{r}");
    let n = 250;
    for i in 0..n {
        old.send(&imu_frame(i, None));
        new.send(&imu_frame(i, None));
    }
    assert_eq!(new.sync(), n, "a durability reply is as before");
    for i in n..2 * n {
        old.send(&imu_frame(i, None));
        new.send(&imu_frame(i, None));
    }
    let trace = d.trace_dir();
    d.signal(libc::SIGTERM);
    // No durability request for the second half: the drain reads what was sent.
    let rest = new.read_to_end();
    let lines: Vec<Value> = rest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"ok": true, "durable": 2 * n, "recording": true, "final": true,
                "trace": trace.file_name().unwrap().to_str().unwrap()})
        ],
        "one final line, then EOF: {rest:?}"
    );
    assert_eq!(
        old.read_to_end(),
        "",
        "a hello without final_ack sees EOF and no line, as before"
    );
    assert!(d.wait(30).success(), "{}", d.log());
    for sensor in ["old", "new"] {
        let (ts, v) = read_sensor(&trace, sensor, "x");
        assert_eq!(ts.len() as u64, 2 * n, "{sensor}");
        assert!((0..2 * n).all(|i| v[i as usize] == x(i)), "{sensor}");
    }
}

#[test]
fn opt_ins_must_be_booleans_and_dedup_needs_seq() {
    let d = TestDaemon::start(json!({}));
    for (extra, msg) in [
        (
            json!({"final_ack": 1}),
            "hello: \"final_ack\" must be true or false",
        ),
        (
            json!({"dedup": true}),
            "hello: \"dedup\" needs \"seq\": true",
        ),
        (json!({"final_ak": true}), "hello: unknown key \"final_ak\""),
    ] {
        let (_c, r) = d.connect(&with(raw_hello("imu", 4), extra));
        assert_eq!(r["ok"], false, "{r}");
        let e = r["error"].as_str().unwrap();
        assert!(e.starts_with(msg), "{e:?} should start with {msg:?}");
    }
}

#[test]
fn with_dedup_a_resent_frame_is_dropped_and_counted_and_without_it_written_as_before() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let dedup = with(raw_hello("imu", 4), json!({"seq": true, "dedup": true}));
    let (mut c, r) = d.connect(&dedup);
    assert_eq!(r["samples"], 0, "{r}");
    for i in 0..10 {
        c.send(&imu_frame(i, Some(i)));
    }
    assert_eq!(c.sync(), 10);
    drop(c);
    // A driver that does not know what the daemon kept resends 5..15 after reconnecting.
    let (mut c, r) = reconnect(&d, &dedup);
    assert_eq!(r["samples"], 10, "{r}");
    for i in 5..15 {
        c.send(&imu_frame(i, Some(i)));
    }
    assert_eq!(c.sync(), 15, "5..10 were repeats, 10..15 new");
    // A counter restarted at 0 sends later times: not a repeat.
    c.send(&frame(T0 + 100.0, Some(0), &[(&x(100), false)]));
    assert_eq!(c.sync(), 16);
    drop(c);
    let st = d.wait_status("the repeats counted", |s| {
        s["sensors"]["imu"]["repeats"] == 5 && s["sensors"]["imu"]["connected"] == false
    });
    assert_eq!(st["sensors"]["imu"]["samples"], 16, "{st}");
    // Without dedup (seq only, as before the opt-in existed) the same resend is written.
    let seq_only = with(raw_hello("imu", 4), json!({"seq": true}));
    let (mut c, _) = reconnect(&d, &seq_only);
    c.send(&imu_frame(14, Some(14)));
    assert_eq!(c.sync(), 17);
    drop(c);
    let trace = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    let (ts, _) = read_sensor(&trace, "imu", "x");
    let mut want: Vec<f64> = (0..15).map(|i| T0 + i as f64).collect();
    want.push(T0 + 100.0);
    want.push(T0 + 14.0);
    assert_eq!(ts, want);
    let repeats: Vec<Event> = events(&trace)
        .into_iter()
        .map(|e| e.event)
        .filter(|e| matches!(e, Event::Repeat { .. }))
        .collect();
    assert_eq!(
        repeats,
        [Event::Repeat {
            sensor: "imu".into(),
            count: 5,
            first_frame: 0,
            first_seq: 5,
            last_seq: 9,
        }]
    );
}
