//! Pre-trigger snapshots through the real daemon: with `snapshot` on and no trace open, the
//! last frames are kept in memory; `trigger` writes them and the next `after` seconds as a
//! normal trace, byte-identical to what was sent, and counts exactly what fell out of the ring.

use crate::support::daemon;

use std::time::{Duration, Instant};

use daemon::*;
use serde_json::{json, Value};

/// Bytes one 64-byte frame takes in the ring: its `len`, `ts` and data.
const HELD: u64 = 4 + 8 + 64;

fn hello() -> Value {
    raw_hello("cam", 64)
}

/// Sends frame `i` of the test's sequence (ts = i) and waits until the writer has it (in
/// the ring, dropped from it, or written; `samples` is the last trace's count, so this holds
/// only while every earlier frame is in one of those).
fn send(d: &TestDaemon, c: &mut Driver, i: u64) {
    c.send(&frame(i as f64, None, &[(&sample(9, i, 64), false)]));
    d.wait_status("the writer took the frame", |st| {
        let s = &st["sensors"]["cam"];
        let seen = st["snapshot"]["frames"].as_u64().unwrap()
            + s["snapshot_dropped"].as_u64().unwrap()
            + s["samples"].as_u64().unwrap();
        seen > i
    });
}

fn wait_stopped(d: &TestDaemon) -> Value {
    let t0 = Instant::now();
    loop {
        let st = d.status();
        if st["recording"] == false {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the triggered trace did not stop within 20 s: {st}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn check_trace(d: &TestDaemon, trace: &str, want: std::ops::Range<u64>) {
    let dir = d.data_root().join(trace);
    let (ts, data) = read_sensor(&dir, "cam", "x");
    let want_ts: Vec<f64> = want.clone().map(|i| i as f64).collect();
    assert_eq!(ts, want_ts, "trace {trace}: timestamps");
    let want_data: Vec<Vec<u8>> = want.map(|i| sample(9, i, 64)).collect();
    assert!(data == want_data, "trace {trace}: sample bytes differ");
}

#[test]
fn trigger_writes_the_ring_and_the_after_window_and_counts_every_drop() {
    let d = TestDaemon::start(json!({
        "autostart": false, "snapshot": true, "pre_trigger_seconds": 600,
        "snapshot_bytes": 10 * HELD}));
    let (mut c, r) = d.connect(&hello());
    assert_eq!(r["ok"], true, "{r}");
    for i in 0..25 {
        send(&d, &mut c, i);
    }
    // The ring holds 10 frames: the 15 before them fell out, counted one by one.
    let st = d.status();
    assert_eq!(st["snapshot"]["frames"], 10, "{st}");
    assert_eq!(st["snapshot"]["bytes"], 10 * HELD, "{st}");
    assert_eq!(st["sensors"]["cam"]["snapshot_dropped"], 15, "{st}");
    assert_eq!(st["sensors"]["cam"]["discarded"], 0, "{st}");

    let t = d.ctl(json!({"cmd": "trigger", "label": "bump", "after": 1.5}));
    assert_eq!(t["ok"], true, "{t}");
    let first = t["trace"].as_str().unwrap().to_string();
    assert!(first.ends_with("bump"), "{t}");
    for i in 25..30 {
        send(&d, &mut c, i);
    }
    let st = wait_stopped(&d);
    assert_eq!(st["sensors"]["cam"]["snapshot_dropped"], 15, "{st}");
    check_trace(&d, &first, 15..30);
    let ev = events(&d.data_root().join(&first));
    assert!(
        ev.iter()
            .any(|e| matches!(&e.event, Event::Start { reason, .. } if reason == "trigger")),
        "{ev:?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(&e.event, Event::Snapshot { sensor, frames: 10 } if sensor == "cam")),
        "{ev:?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(&e.event, Event::Stop { reason, .. } if reason == "trigger_after")),
        "{ev:?}"
    );

    // Back to the ring, and a second trigger: only what came since.
    for i in 30..33 {
        send(&d, &mut c, i);
    }
    let t = d.ctl(json!({"cmd": "trigger", "after": 0.5}));
    assert_eq!(t["ok"], true, "{t}");
    let second = t["trace"].as_str().unwrap().to_string();
    assert_ne!(second, first);
    let st = wait_stopped(&d);
    check_trace(&d, &second, 30..33);
    assert_eq!(st["sensors"]["cam"]["snapshot_dropped"], 15, "{st}");
    // The driver noticed nothing: the connection is still up.
    c.send(&frame(33.0, None, &[(&sample(9, 33, 64), false)]));
    let st = d.wait_status("frame 33 in the ring", |st| st["snapshot"]["frames"] == 1);
    assert_eq!(st["sensors"]["cam"]["connected"], true, "{st}");
}

#[test]
fn frames_older_than_the_pre_trigger_window_are_dropped_and_counted() {
    let d = TestDaemon::start(json!({
        "autostart": false, "snapshot": true, "pre_trigger_seconds": 1.0}));
    let (mut c, _) = d.connect(&hello());
    for i in 0..5 {
        send(&d, &mut c, i);
    }
    std::thread::sleep(Duration::from_millis(1600));
    for i in 5..8 {
        send(&d, &mut c, i);
    }
    let t = d.ctl(json!({"cmd": "trigger", "after": 0.3}));
    assert_eq!(t["ok"], true, "{t}");
    let trace = t["trace"].as_str().unwrap().to_string();
    let st = wait_stopped(&d);
    check_trace(&d, &trace, 5..8);
    assert_eq!(st["sensors"]["cam"]["snapshot_dropped"], 5, "{st}");
}

#[test]
fn trigger_is_refused_without_snapshot_mode_and_while_a_manual_trace_records() {
    let d = TestDaemon::start(json!({}));
    let r = d.ctl(json!({"cmd": "trigger"}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("snapshot"), "{r}");

    let d = TestDaemon::start(json!({"snapshot": true}));
    let r = d.ctl(json!({"cmd": "trigger"}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("stop it first"),
        "{r}"
    );
    let r = d.ctl(json!({"cmd": "stop"}));
    assert_eq!(r["ok"], true, "{r}");
    let r = d.ctl(json!({"cmd": "trigger", "after": -1}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("after"), "{r}");
}

/// A rotation inside the after window (SIGHUP, `rotate_*`, `ctl rotate`) splits the triggered
/// trace; the stop still comes `after` the trigger, in the part then recording, and nothing
/// is lost across the split. Under the `block` policy, as the ring never holds queue bytes.
#[test]
fn a_rotation_inside_the_after_window_keeps_the_stop_and_every_frame() {
    let d = TestDaemon::start(json!({
        "autostart": false, "snapshot": true, "queue_policy": "block"}));
    let (mut c, _) = d.connect(&hello());
    for i in 0..4 {
        send(&d, &mut c, i);
    }
    let t = d.ctl(json!({"cmd": "trigger", "after": 2.0}));
    assert_eq!(t["ok"], true, "{t}");
    let first = t["trace"].as_str().unwrap().to_string();
    let r = d.ctl(json!({"cmd": "rotate", "label": "part2"}));
    assert_eq!(r["ok"], true, "{r}");
    let second = r["trace"].as_str().unwrap().to_string();
    for i in 4..7 {
        c.send(&frame(i as f64, None, &[(&sample(9, i, 64), false)]));
    }
    let st = wait_stopped(&d);
    check_trace(&d, &first, 0..4);
    check_trace(&d, &second, 4..7);
    assert_eq!(st["sensors"]["cam"]["snapshot_dropped"], 0, "{st}");
    let ev = events(&d.data_root().join(&second));
    assert!(
        ev.iter()
            .any(|e| matches!(&e.event, Event::Stop { reason, .. } if reason == "trigger_after")),
        "{ev:?}"
    );
}

/// A second trigger while the triggered trace records moves its stop (here through
/// `roverlog ctl trigger --after 1.5s`).
#[test]
fn a_second_trigger_moves_the_stop() {
    let d = TestDaemon::start(json!({"autostart": false, "snapshot": true}));
    let t = d.ctl(json!({"cmd": "trigger", "after": 1.0}));
    assert_eq!(t["ok"], true, "{t}");
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["ctl", "--json", "--socket"])
        .arg(d.control_path())
        .args(["trigger", "--after", "1.5s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(r["extended"], true, "{r}");
    // Past the first trigger's 1 s, within the second's 1.5 s (from 0.5 s): still recording.
    std::thread::sleep(Duration::from_millis(1300).saturating_sub(t0.elapsed()));
    let st = d.status();
    assert_eq!(
        st["recording"], true,
        "stopped at the first trigger's time: {st}"
    );
    wait_stopped(&d);
    assert!(
        t0.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        t0.elapsed()
    );
}

/// A driver that leaves while nothing records takes its ring frames with it (a reconnection
/// may declare other channels): counted in `snapshot.dropped_frames`, and a reconnection
/// with another layout records only its own frames.
#[test]
fn a_driver_leaving_drops_its_ring_frames_counted() {
    let d = TestDaemon::start(json!({"autostart": false, "snapshot": true}));
    let (mut c, _) = d.connect(&hello());
    for i in 0..3 {
        send(&d, &mut c, i);
    }
    drop(c);
    let st = d.wait_status("the ring emptied", |st| st["snapshot"]["frames"] == 0);
    assert_eq!(st["snapshot"]["dropped_frames"], 3, "{st}");
    let (mut c, r) = d.connect(&raw_hello("cam", 8));
    assert_eq!(r["ok"], true, "{r}");
    c.send(&frame(7.0, None, &[(&[7; 8], false)]));
    d.wait_status("the new frame in the ring", |st| {
        st["snapshot"]["frames"] == 1
    });
    let t = d.ctl(json!({"cmd": "trigger", "after": 0.3}));
    assert_eq!(t["ok"], true, "{t}");
    let trace = t["trace"].as_str().unwrap().to_string();
    wait_stopped(&d);
    let (ts, data) = read_sensor(&d.data_root().join(trace), "cam", "x");
    assert_eq!(ts, [7.0]);
    assert_eq!(data, [vec![7u8; 8]]);
}

/// Snapshot mode switched by command: on, a trigger works; off, the ring's frames are dropped
/// (counted) and a trigger is refused.
#[test]
fn snapshot_mode_is_switched_by_command() {
    let d = TestDaemon::start(json!({"autostart": false}));
    assert_eq!(d.status()["snapshot"]["enabled"], false);
    let (mut c, _) = d.connect(&hello());
    c.send(&frame(0.0, None, &[(&sample(9, 0, 64), false)]));
    d.wait_status("frame 0 discarded", |st| {
        st["sensors"]["cam"]["discarded"] == 1
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["ctl", "--json", "--socket"])
        .arg(d.control_path())
        .args(["snapshot", "on"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for i in 1..3 {
        c.send(&frame(i as f64, None, &[(&sample(9, i, 64), false)]));
    }
    d.wait_status("frames 1 and 2 in the ring", |st| {
        st["snapshot"]["frames"] == 2
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["ctl", "--socket"])
        .arg(d.control_path())
        .arg("status")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("snapshot: on, 2 frame(s)") && text.contains("0 dropped from the ring"),
        "{text}"
    );
    let r = d.ctl(json!({"cmd": "snapshot", "on": false}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["snapshot"]["dropped_frames"], 2, "{r}");
    assert_eq!(r["snapshot"]["frames"], 0, "{r}");
    let r = d.ctl(json!({"cmd": "trigger"}));
    assert_eq!(r["ok"], false, "{r}");

    let r = d.ctl(json!({"cmd": "snapshot", "on": true}));
    assert_eq!(r["snapshot"]["enabled"], true, "{r}");
    for i in 3..5 {
        c.send(&frame(i as f64, None, &[(&sample(9, i, 64), false)]));
    }
    d.wait_status("frames 3 and 4 in the ring", |st| {
        st["snapshot"]["frames"] == 2
    });
    let t = d.ctl(json!({"cmd": "trigger", "after": 0.3}));
    assert_eq!(t["ok"], true, "{t}");
    let trace = t["trace"].as_str().unwrap().to_string();
    wait_stopped(&d);
    check_trace(&d, &trace, 3..5);
}

/// Under the `drop` policy too (the ring never holds queue bytes, so a full ring cannot make
/// the queue drop): the trace holds the ring and the after window, nothing dropped.
#[test]
fn under_the_drop_policy_a_trigger_keeps_every_frame() {
    let d = TestDaemon::start(json!({
        "autostart": false, "snapshot": true, "queue_policy": "drop", "queue_bytes": 4096,
        "max_frame_bytes": 1024}));
    let (mut c, _) = d.connect(&hello());
    // 80 frames of 76 bytes: more than the 4096-byte queue, all in the ring.
    for i in 0..80 {
        send(&d, &mut c, i);
    }
    let t = d.ctl(json!({"cmd": "trigger", "after": 1.0}));
    assert_eq!(t["ok"], true, "{t}");
    let trace = t["trace"].as_str().unwrap().to_string();
    for i in 80..83 {
        send(&d, &mut c, i);
    }
    let st = wait_stopped(&d);
    check_trace(&d, &trace, 0..83);
    assert_eq!(st["sensors"]["cam"]["drops"], 0, "{st}");
    assert_eq!(st["sensors"]["cam"]["snapshot_dropped"], 0, "{st}");
}

/// `status` shows how far back the ring reaches, and while a triggered trace records, how
/// long until it stops; a trigger moves that; an ordinary `start`'s trace has none. The
/// config's sensors that are not there are listed as absent (the dashboard's greyed rows).
#[test]
fn status_shows_the_ring_s_reach_the_trigger_s_stop_and_absent_sensors() {
    let d = TestDaemon::start(json!({
        "autostart": false, "snapshot": true, "pre_trigger_seconds": 600,
        "sensors": {"cam": {"expected_hz": 10}, "gps": {"required": true, "expected_hz": 5}}}));
    let st = d.status();
    assert_eq!(
        st["absent_sensors"],
        json!({"cam": {"required": false, "expected_hz": 10.0},
               "gps": {"required": true, "expected_hz": 5.0}}),
        "{st}"
    );
    assert_eq!(st["snapshot"]["held_seconds"], 0.0, "an empty ring: {st}");
    let (mut c, r) = d.connect(&hello());
    assert_eq!(r["ok"], true, "{r}");
    send(&d, &mut c, 0);
    std::thread::sleep(Duration::from_millis(600));
    send(&d, &mut c, 1);
    let st = d.status();
    let held = st["snapshot"]["held_seconds"].as_f64().unwrap();
    assert!(
        (0.5..60.0).contains(&held),
        "the first frame is {held} s old: {st}"
    );
    assert!(st["absent_sensors"].get("cam").is_none(), "{st}");
    assert_eq!(st["snapshot"]["trigger_stops_in_s"], Value::Null, "{st}");

    let t = d.ctl(json!({"cmd": "trigger", "after": 30}));
    assert_eq!(t["ok"], true, "{t}");
    let left = |st: &Value| st["snapshot"]["trigger_stops_in_s"].as_f64();
    let st = d.status();
    assert!(
        left(&st).is_some_and(|s| (20.0..=30.0).contains(&s)),
        "30 s after the trigger: {st}"
    );
    let t = d.ctl(json!({"cmd": "trigger", "after": 100}));
    assert_eq!(t["extended"], true, "{t}");
    let st = d.status();
    assert!(
        left(&st).is_some_and(|s| (90.0..=100.0).contains(&s)),
        "moved to 100 s: {st}"
    );
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], true);
    assert_eq!(d.ctl(json!({"cmd": "start"}))["ok"], true);
    let st = d.status();
    assert_eq!(st["snapshot"]["trigger_stops_in_s"], Value::Null, "{st}");
}
