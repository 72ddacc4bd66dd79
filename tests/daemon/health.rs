//! Health alarms through the real daemon (issue 16): a driver that stops sending raises
//! `silent` within its bound and clears it when it resumes; a required sensor that never
//! connects raises `missing`; a rate outside the tolerance raises `rate_low` or `rate_high`;
//! a writer that falls behind raises `queue_high`; the disk alarm follows the write rate; `alarm_command` gets every alarm as JSON and a hung one stalls
//! nothing; `ctl status` shows the alarms first.

use crate::support::common;
use crate::support::daemon;

use std::time::{Duration, Instant};

use daemon::*;
use roverlog_bench::noise;
use serde_json::{json, Value};

/// Polls status until `ok` holds (bounded), naming `what` on failure.
fn wait(d: &TestDaemon, what: &str, secs: u64, ok: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        let st = d.status();
        if ok(&st) {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "no {what} within {secs} s: {st:#}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn has(st: &Value, kind: &str, sensor: &str) -> bool {
    st["alarms"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["alarm"] == kind && a["sensor"] == sensor)
}

fn send(c: &mut Driver, from: u64, n: u64, hz: f64) {
    for i in from..from + n {
        c.send(&frame(
            1.7e9 + i as f64 / hz,
            None,
            &[(&sample(1, i, 8), false)],
        ));
        std::thread::sleep(Duration::from_secs_f64(1.0 / hz));
    }
}

#[test]
fn silent_missing_and_rate_alarms_are_raised_and_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("alarms.jsonl");
    let script = format!("cat >> {}", log.display());
    let d = TestDaemon::start(json!({
        "sensors": {"imu": {"expected_hz": 50.0, "tolerance": 0.3}, "gps": {"required": true}},
        "silent_periods": 5, "missing_after_ms": 400, "rate_window_ms": 600,
        "health_interval_ms": 50, "alarm_command": ["sh", "-c", script],
    }));
    // gps never connects: missing.
    wait(&d, "missing gps", 10, |st| has(st, "missing", "gps"));

    let (mut c, r) = d.connect(&raw_hello("imu", 8));
    assert_eq!(r["ok"], true, "{r}");
    send(&mut c, 0, 40, 50.0);
    let st = d.status();
    assert!(
        !has(&st, "silent", "imu") && !has(&st, "rate_low", "imu"),
        "{st:#}"
    );
    // Stops sending (still connected): silent within 5 periods (100 ms) plus a tick.
    let t0 = Instant::now();
    let st = wait(&d, "silent imu", 10, |st| has(st, "silent", "imu"));
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "silent took {:?}",
        t0.elapsed()
    );
    assert_eq!(st["sensors"]["imu"]["alarms"][0]["alarm"], "silent");
    let text = common::roverlog(&[
        "ctl".as_ref(),
        "--socket".as_ref(),
        d.control_path().as_os_str(),
        "status".as_ref(),
    ]);
    assert!(
        text.out().starts_with("ALARM "),
        "alarms come first:\n{}",
        text.out()
    );
    assert!(text.out().contains("SILENT imu"), "{}", text.out());
    // Resumes at half the rate: silent clears, rate_low follows.
    send(&mut c, 40, 30, 20.0);
    let st = wait(&d, "rate_low imu", 10, |st| {
        has(st, "rate_low", "imu") && !has(st, "silent", "imu")
    });
    assert!(
        st["alarms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["alarm"] == "rate_low" && a["rate_hz"].as_f64().unwrap() < 35.0),
        "{st:#}"
    );
    // gps connects: missing clears.
    let (_g, r) = d.connect(&raw_hello("gps", 4));
    assert_eq!(r["ok"], true, "{r}");
    wait(&d, "missing gps cleared", 10, |st| {
        !has(st, "missing", "gps")
    });

    let trace = d.trace_dir();
    let ev = events(&trace);
    let kinds: Vec<(String, String)> = ev.iter().filter_map(alarm_of).collect();
    for want in [
        ("alarm", "missing"),
        ("alarm", "silent"),
        ("alarm_clear", "silent"),
        ("alarm", "rate_low"),
        ("alarm_clear", "missing"),
    ] {
        assert!(
            kinds.contains(&(want.0.into(), want.1.into())),
            "{want:?} in {kinds:?}"
        );
    }
    let (start, end) = ev
        .iter()
        .find_map(|e| match &e.event {
            Event::AlarmClear {
                alarm, start, end, ..
            } if alarm == "silent" => Some((*start, *end)),
            _ => None,
        })
        .unwrap();
    assert!(end > start);
    // The command saw the same alarms, as JSON lines.
    let t0 = Instant::now();
    loop {
        let got = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<Value> = got
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let seen = |kind: &str, state: &str| {
            lines
                .iter()
                .any(|a| a["alarm"] == kind && a["state"] == state)
        };
        if seen("silent", "raised") && seen("silent", "cleared") && seen("missing", "raised") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "alarm_command output: {got}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_learned_rate_and_a_hung_alarm_command_stall_nothing() {
    let d = TestDaemon::start(json!({
        "silent_periods": 5, "learn_rate_ms": 600, "rate_window_ms": 400, "health_interval_ms": 50,
        "alarm_command": ["sleep", "30"], "alarm_command_timeout_ms": 300,
        // Any write rate is too fast for this much disk: disk_low.
        "disk_low_seconds": 1_000_000_000_000u64,
    }));
    let (mut c, r) = d.connect(&raw_hello("lidar", 8));
    assert_eq!(r["ok"], true, "{r}");
    send(&mut c, 0, 60, 40.0); // 1.5 s at 40 Hz: the rate is learned after 0.6 s
    wait(&d, "disk_low", 10, |st| has(st, "disk_low", ""));
    // No expected_hz configured: silent only once the rate was learned.
    let t0 = Instant::now();
    wait(&d, "silent lidar (learned rate)", 10, |st| {
        has(st, "silent", "lidar")
    });
    assert!(t0.elapsed() < Duration::from_secs(2));
    // Hung alarm commands (sleep 30, killed after 300 ms) never delayed a reply.
    let t0 = Instant::now();
    for _ in 0..10 {
        assert_eq!(d.status()["ok"], true);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "status took {:?}",
        t0.elapsed()
    );
    let log = d.log();
    assert!(log.contains("learned the sensor's rate"), "{log}");
    assert!(log.contains("killed"), "{log}");
}

#[test]
fn rate_high_and_queue_high_are_raised_and_cleared() {
    const N: usize = 1 << 20;
    let d = TestDaemon::start(json!({
        "sensors": {"imu": {"expected_hz": 10.0, "tolerance": 0.3}},
        "silent_periods": 20, "rate_window_ms": 600, "health_interval_ms": 50,
        "queue_bytes": 8 << 20, "max_frame_bytes": 2 << 20, "queue_high_fraction": 0.3,
    }));
    // imu at four times its expected rate for 2.5 s (a rate alarm needs the rate out of
    // its bounds for a second): rate_high; back at 10 Hz it clears (a second after).
    let (mut c, r) = d.connect(&raw_hello("imu", 8));
    assert_eq!(r["ok"], true, "{r}");
    send(&mut c, 0, 100, 40.0);
    let st = wait(&d, "rate_high imu", 10, |st| has(st, "rate_high", "imu"));
    assert!(!has(&st, "rate_low", "imu"), "{st:#}");
    send(&mut c, 100, 30, 10.0);
    wait(&d, "rate_high imu cleared", 10, |st| {
        !has(st, "rate_high", "imu")
    });

    // A lidar whose lzmaf frames compress at a few MB/s while four 1 MiB frames arrive at
    // once: its writer falls behind and its queue holds over 30% of 8 MiB.
    let hello = json!({"roverlog": 1, "sensor": "lidar", "channels": [
        {"name": "rng", "format": "lzmaf", "type": "u1", "shape": [N]}]});
    let (mut l, r) = d.connect(&hello);
    assert_eq!(r["ok"], true, "{r}");
    let frames: Vec<Vec<u8>> = (0..4).map(|i| noise(N, 0x9e37_79b9 + i)).collect();
    for (i, f) in frames.iter().enumerate() {
        l.send(&frame(1.7e9 + i as f64, None, &[(f, false)]));
    }
    let st = wait(&d, "queue_high lidar", 20, |st| {
        has(st, "queue_high", "lidar")
    });
    let alarm = &st["sensors"]["lidar"]["alarms"][0];
    assert_eq!(alarm["alarm"], "queue_high", "{st:#}");
    assert!(
        alarm["queue_bytes"].as_u64().unwrap() > (8 << 20) * 3 / 10,
        "{alarm}"
    );
    // Once everything is written the queue is empty again: cleared, nothing lost.
    assert_eq!(l.sync(), 4);
    wait(&d, "queue_high lidar cleared", 20, |st| {
        !has(st, "queue_high", "lidar")
    });
    let (_, back) = read_sensor(&d.trace_dir(), "lidar", "rng");
    assert_eq!(back, frames, "the frames read back differ");
    let ev = events(&d.trace_dir());
    for (event, kind) in [
        ("alarm", "rate_high"),
        ("alarm_clear", "rate_high"),
        ("alarm", "queue_high"),
        ("alarm_clear", "queue_high"),
    ] {
        assert!(
            ev.iter()
                .filter_map(alarm_of)
                .any(|(e, a)| e == event && a == kind),
            "no {event} {kind} in events.jsonl: {ev:?}"
        );
    }
}

/// `(event kind, alarm)` of an `alarm` or `alarm_clear` event.
fn alarm_of(e: &EventLine) -> Option<(String, String)> {
    match &e.event {
        Event::Alarm { alarm, .. } | Event::AlarmClear { alarm, .. } => {
            Some((e.event.kind().to_string(), alarm.clone()))
        }
        _ => None,
    }
}
