//! Receive timestamps (issue 16): the daemon records its own receive time of every sample in
//! a `ts_recv` channel beside the driver's `ts`; `status` shows the driver-vs-daemon clock
//! offset and jitter; a sensor can be left out; a trace an older daemon wrote (no `ts_recv`)
//! resumes without one.

use crate::support::common;
use crate::support::daemon;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use daemon::*;
use serde_json::json;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn receive_times_are_recorded_and_the_clock_offset_is_measured() {
    let d = TestDaemon::start(json!({"receive_timestamps_except": ["gps"]}));
    let (mut imu, r) = d.connect(&raw_hello("imu", 16));
    assert_eq!(r["ok"], true, "{r}");
    let (mut gps, r) = d.connect(&raw_hello("gps", 4));
    assert_eq!(r["ok"], true, "{r}");
    // The driver's clock is 3 s behind the daemon's.
    let t_first = now();
    for i in 0..200u64 {
        imu.send(&frame(now() - 3.0, None, &[(&sample(1, i, 16), false)]));
        gps.send(&frame(now(), None, &[(&sample(2, i, 4), false)]));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(imu.sync(), 200);
    assert_eq!(gps.sync(), 200);
    let t_last = now();
    let st = d.status();
    let off = st["sensors"]["imu"]["clock_offset_s"].as_f64().unwrap();
    let jitter = st["sensors"]["imu"]["clock_jitter_s"].as_f64().unwrap();
    assert!(
        (off - 3.0).abs() < 0.25,
        "offset {off} (the driver is 3 s behind): {st}"
    );
    assert!((0.0..0.25).contains(&jitter), "jitter {jitter}");
    let gps_off = st["sensors"]["gps"]["clock_offset_s"].as_f64().unwrap();
    assert!(gps_off.abs() < 0.25, "{gps_off}");
    assert_eq!(
        st["sensors"]["imu"]["bytes"],
        200 * (8 + 16),
        "bytes count what was received"
    );

    let trace = d.trace_dir();
    let (ts, recv) = read_sensor(&trace, "imu", "ts_recv");
    let recv: Vec<f64> = recv
        .iter()
        .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap()))
        .collect();
    assert_eq!(recv.len(), 200);
    assert!(
        recv.windows(2).all(|w| w[1] >= w[0]),
        "receive times are monotone"
    );
    assert!(
        recv[0] >= t_first && recv[199] <= t_last,
        "{} .. {} vs {t_first} .. {t_last}",
        recv[0],
        recv[199]
    );
    for (t, r) in ts.iter().zip(&recv) {
        assert!((r - t - 3.0).abs() < 0.25, "ts {t} received {r}");
    }
    let meta = std::fs::read_to_string(trace.join("gps/meta.json")).unwrap();
    assert!(!meta.contains("ts_recv"), "gps is excepted: {meta}");
    assert!(std::fs::read_to_string(trace.join("imu/meta.json"))
        .unwrap()
        .contains("ts_recv"));
    common::assert_upstream_reads_same(&trace);
}

#[test]
fn a_trace_without_receive_times_resumes_without_them() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let (mut c, _) = d.connect(&raw_hello("imu", 8));
    for i in 0..10u64 {
        c.send(&frame(i as f64, None, &[(&sample(1, i, 8), false)]));
    }
    assert_eq!(c.sync(), 10);
    let trace = d.trace_dir();
    d.kill9();
    drop(c);
    // The same data_root, now with receive times on: the unfinished trace resumes as it was.
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&d.config).unwrap()).unwrap();
    let mut cfg = cfg;
    cfg["receive_timestamps"] = json!(true);
    std::fs::write(&d.config, serde_json::to_vec(&cfg).unwrap()).unwrap();
    d.spawn();
    assert_eq!(d.trace_dir(), trace);
    let (mut c, r) = d.connect(&raw_hello("imu", 8));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["samples"], 10);
    for i in 10..20u64 {
        c.send(&frame(i as f64, None, &[(&sample(1, i, 8), false)]));
    }
    assert_eq!(c.sync(), 20);
    let (ts, x) = read_sensor(&trace, "imu", "x");
    assert_eq!(ts.len(), 20);
    assert_eq!(x[15], sample(1, 15, 8));
    assert!(!std::fs::read_to_string(trace.join("imu/meta.json"))
        .unwrap()
        .contains("ts_recv"));
    assert!(d.stop().success(), "{}", d.log());
}

#[test]
fn a_driver_clock_that_jumps_is_a_clock_step_event() {
    let d = TestDaemon::start(json!({"health_interval_ms": 50, "clock_step_threshold_s": 1.0}));
    let (mut c, _) = d.connect(&raw_hello("radar", 8));
    for i in 0..300u64 {
        c.send(&frame(now(), None, &[(&sample(1, i, 8), false)]));
        if i % 50 == 0 {
            std::thread::sleep(Duration::from_millis(60)); // the health task sees offset 0
        }
    }
    assert_eq!(c.sync(), 300);
    std::thread::sleep(Duration::from_millis(150));
    // The driver's clock jumps 5 s ahead (NTP caught up, say).
    for i in 300..1100u64 {
        c.send(&frame(now() + 5.0, None, &[(&sample(1, i, 8), false)]));
    }
    assert_eq!(c.sync(), 1100);
    let trace = d.trace_dir();
    let t0 = std::time::Instant::now();
    loop {
        let ev = events(&trace);
        if let Some((sensor, from, to)) = ev.iter().find_map(|e| match &e.event {
            Event::ClockStep {
                sensor,
                kind: Some(ClockStepKind::Offset),
                from,
                to,
                ..
            } => Some((sensor, from, to)),
            _ => None,
        }) {
            assert_eq!(sensor, "radar");
            assert!(from.abs() < 0.5, "{ev:?}");
            assert!((to + 5.0).abs() < 0.5, "{ev:?}");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no clock_step event: {ev:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A driver clock running at half speed moves the offset past the threshold every few ticks;
/// the daemon writes one event for the first move and coalesces the rest into at most one
/// more per sensor per `CLOCK_STEP_HOLD` (10 s), each counting its moves.
#[test]
fn a_steadily_drifting_clock_gives_a_bounded_number_of_clock_step_events() {
    let mut d =
        TestDaemon::start(json!({"health_interval_ms": 20, "clock_step_threshold_s": 0.05}));
    let (mut c, r) = d.connect(&raw_hello("radar", 8));
    assert_eq!(r["ok"], true, "{r}");
    let t0 = now();
    let started = std::time::Instant::now();
    let mut i = 0u64;
    // 3 s at half speed: the offset grows by 1.5 s, 30 thresholds' worth.
    while started.elapsed() < Duration::from_secs(3) {
        let t = now();
        c.send(&frame(
            t0 + (t - t0) * 0.5,
            None,
            &[(&sample(1, i, 8), false)],
        ));
        i += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(c.sync(), i);
    let elapsed = started.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(200)); // a few more health ticks
    let st = d.status();
    let off = st["sensors"]["radar"]["clock_offset_s"].as_f64().unwrap();
    assert!(off > 0.5, "the offset did drift: {st}");
    let steps: Vec<Option<u64>> = events(&d.trace_dir())
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ClockStep {
                kind: Some(ClockStepKind::Offset),
                moves,
                ..
            } => Some(moves),
            _ => None,
        })
        .collect();
    let bound = 1 + (elapsed / 10.0).ceil() as usize;
    assert!(
        !steps.is_empty(),
        "no clock_step event for a drift of {off} s"
    );
    assert!(
        steps.len() <= bound,
        "{} clock_step events in {elapsed:.1} s (at most {bound}): {steps:?}",
        steps.len()
    );
    assert!(steps.iter().all(|m| m.is_some_and(|m| m >= 1)), "{steps:?}");
    assert!(d.stop().success(), "{}", d.log());
}
