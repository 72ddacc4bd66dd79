//! Slow disk / overload (issue 6): several sensors with mixed formats, drivers faster than
//! the writer (`debug_write_delay_ms`). `block`: the drivers are slowed and every sample sent
//! is on disk, byte-identical. `drop`: the samples missing from the files are exactly the
//! ones the `drop` events name (by frame and time span), and the counters in `status` agree.
//!
//! `tests/daemon/control.rs` covers one raw sensor per policy; this adds several sensors at
//! once, `lzmaf` and `jpg`, and checks the exact set of missing seqs against the events.

use crate::support::daemon;
use crate::support::torture;

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

use daemon::{events, Event, TestDaemon};
use serde_json::json;
use torture::*;

fn load() -> Vec<Spec> {
    vec![
        Spec::new("imu", 11, vec![Chan::Raw(64)], 0.0, (0, 0)),
        Spec::new("radar", 12, vec![Chan::Raw(6000)], 0.0, (0, 0)),
        Spec::new("lidar", 13, vec![Chan::Lzmaf(8192)], 0.0, (0, 0)),
        Spec::new("cam", 14, vec![Chan::Jpg(100, 16_000)], 0.0, (0, 0)),
        Spec::new(
            "rig",
            15,
            vec![Chan::Raw(512), Chan::Lzmaf(2048), Chan::Jpg(16, 4000)],
            0.0,
            (0, 0),
        ),
    ]
}

/// Frames of 256 KiB and more are received into pooled buffers of their own (a separate
/// path in `daemon::ingest`): raw and variable-size jpg samples of that size.
fn large_load() -> Vec<Spec> {
    vec![
        Spec::new("radar", 21, vec![Chan::Raw(300_000)], 0.0, (0, 0)),
        Spec::new("cam", 22, vec![Chan::Jpg(200_000, 450_000)], 0.0, (0, 0)),
        Spec::new("imu", 23, vec![Chan::Raw(64)], 0.0, (0, 0)),
    ]
}

const QUEUE: u64 = 64 << 10;
const LARGE_QUEUE: u64 = 1 << 20;

fn overloaded(policy: &str) -> TestDaemon {
    TestDaemon::start(json!({
        "queue_policy": policy, "queue_bytes": QUEUE, "max_frame_bytes": 32 << 10,
        "debug_write_delay_ms": 2, "compress_threads": 1,
    }))
}

fn overloaded_large(policy: &str) -> TestDaemon {
    TestDaemon::start(json!({
        "queue_policy": policy, "queue_bytes": LARGE_QUEUE, "max_frame_bytes": 512 << 10,
        "debug_write_delay_ms": 20,
    }))
}

#[test]
fn block_slows_every_driver_and_loses_nothing() {
    let n = knob("ROVERLOG_OVERLOAD_FRAMES", 400, 3000);
    block_case(
        "torture_overload block",
        overloaded("block"),
        load(),
        n,
        QUEUE,
    );
}

#[test]
fn block_with_large_frames_loses_nothing() {
    let n = knob("ROVERLOG_OVERLOAD_FRAMES", 60, 1000);
    let d = overloaded_large("block");
    block_case(
        "torture_overload block large",
        d,
        large_load(),
        n,
        LARGE_QUEUE,
    );
}

fn block_case(test: &str, d: TestDaemon, load: Vec<Spec>, n: u64, queue: u64) {
    let seed = seed(test);
    let trace = d.trace_dir();
    let ctl = Arc::new(Control::default());
    let t0 = std::time::Instant::now();
    let mut drivers: Vec<DriverThread> = load
        .into_iter()
        .map(|s| spawn_driver(&d.ingest_path(), s, seed, ctl.clone(), Some(n), true))
        .collect();
    for dr in &mut drivers {
        dr.handle.take().unwrap().join().unwrap();
    }
    let elapsed = t0.elapsed();
    let v = violations(&drivers);
    assert!(v.is_empty(), "{v:#?}");
    let st = d.status();
    for dr in &drivers {
        let name = &dr.spec.name;
        assert_eq!(dr.state.sent.load(SeqCst), n);
        assert_eq!(dr.state.acked.load(SeqCst), n, "{name}: final durable");
        let on_disk = verify_sensor(&trace, &dr.spec, Some(0), 0, 1).unwrap();
        assert_eq!(on_disk.len, n, "{name}");
        let s = &st["sensors"][name];
        assert_eq!(s["drops"], 0, "{s}");
        assert_eq!(s["samples"], n, "{s}");
        let hw = s["queue_high_water"].as_u64().unwrap();
        assert!(hw > 0 && hw <= queue, "{name}: {s}");
        eprintln!(
            "block {name}: {n} frames in {:.2} s, {:.2} s blocked in write, queue high water {hw}",
            elapsed.as_secs_f64(),
            dr.state.write_wait_us.load(SeqCst) as f64 / 1e6
        );
    }
    assert!(!events(&trace)
        .iter()
        .any(|e| matches!(e.event, Event::Drop { .. })));
}

#[test]
fn drop_loses_exactly_the_samples_the_events_name() {
    let n = knob("ROVERLOG_OVERLOAD_FRAMES", 400, 3000);
    drop_case("torture_overload drop", overloaded("drop"), load(), n);
}

#[test]
fn drop_with_large_frames_loses_exactly_the_samples_the_events_name() {
    let n = knob("ROVERLOG_OVERLOAD_FRAMES", 60, 1000);
    let d = overloaded_large("drop");
    drop_case("torture_overload drop large", d, large_load(), n);
}

fn drop_case(test: &str, d: TestDaemon, load: Vec<Spec>, n: u64) {
    let seed = seed(test);
    let trace = d.trace_dir();
    let ctl = Arc::new(Control::default());
    let mut drivers: Vec<DriverThread> = load
        .into_iter()
        .map(|s| spawn_driver(&d.ingest_path(), s, seed, ctl.clone(), Some(n), false))
        .collect();
    for dr in &mut drivers {
        dr.handle.take().unwrap().join().unwrap();
    }
    let st = d.status();
    let ev = events(&trace);
    let mut total_drops = 0;
    for dr in &drivers {
        let spec = &dr.spec;
        let name = &spec.name;
        assert_eq!(dr.state.sent.load(SeqCst), n);
        let kept = seqs_on_disk(&trace, spec).unwrap();
        let kept_set: BTreeSet<u64> = kept.iter().copied().collect();
        let missing: BTreeSet<u64> = (0..n).filter(|s| !kept_set.contains(s)).collect();
        // One connection from seq 0: frame number = seq.
        let mut named = BTreeSet::new();
        for e in &ev {
            let Event::Drop {
                sensor,
                count,
                first_frame,
                from_ts,
                to_ts,
            } = &e.event
            else {
                continue;
            };
            if sensor != name {
                continue;
            }
            let (first, count) = (*first_frame, *count);
            assert!(count > 0, "{e:?}");
            assert_eq!(*from_ts, spec.ts(first), "{e:?}");
            assert_eq!(*to_ts, spec.ts(first + count - 1), "{e:?}");
            for s in first..first + count {
                assert!(named.insert(s), "{name}: seq {s} named by two drop events");
            }
        }
        assert_eq!(
            missing, named,
            "{name}: samples missing from the files vs samples the drop events name"
        );
        let s = &st["sensors"][name];
        assert_eq!(s["drops"], missing.len() as u64, "{s}");
        assert_eq!(s["samples"], kept.len() as u64, "{s}");
        assert_eq!(s["gaps"], 0, "{s}");
        assert_eq!(
            dr.state.acked.load(SeqCst),
            kept.len() as u64,
            "{name}: final durable"
        );
        eprintln!(
            "drop {name}: {n} sent, {} kept, {} dropped in {} events",
            kept.len(),
            missing.len(),
            ev.iter()
                .filter(|e| matches!(&e.event, Event::Drop { sensor, .. } if sensor == name))
                .count()
        );
        total_drops += missing.len();
    }
    assert!(
        total_drops > 0,
        "the slow writer must have caused drops: {st}"
    );
}

#[test]
fn periodic_fsync_keeps_its_interval_through_a_backlog() {
    // A writer 30 ms per sample with 150 samples queued needs 4.5 s; the fsync interval is
    // 100 ms. The durable watermark must move while the backlog is written, not only at its
    // end (it did only at the end: the writer looked at its timers every 257 messages).
    let d = TestDaemon::start(json!({
        "debug_write_delay_ms": 30, "fsync_interval_ms": 100, "flush_interval_ms": 50,
    }));
    let spec = Spec::new("radar", 16, vec![Chan::Raw(40 << 10)], 0.0, (0, 0));
    let (mut c, _) =
        roverlog_client::Driver::connect(&d.ingest_path(), &spec.name, &spec.meta(), true).unwrap();
    let n = 150u64;
    let mut b = Vec::new();
    for seq in 0..n {
        spec.content(0, seq, &mut b);
        c.send(spec.ts(seq), Some(seq), &[&b]).unwrap();
    }
    let mut durable_mid_backlog = 0;
    loop {
        let s = &d.status()["sensors"]["radar"];
        let (samples, durable) = (
            s["samples"].as_u64().unwrap(),
            s["durable"].as_u64().unwrap(),
        );
        if samples == n {
            break;
        }
        durable_mid_backlog = durable_mid_backlog.max(durable);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        durable_mid_backlog > 0,
        "no fsync while {n} samples were written over ~4.5 s with fsync_interval_ms 100"
    );
    assert_eq!(c.sync().unwrap(), n);
    verify_sensor(&d.trace_dir(), &spec, Some(0), 0, 1).unwrap();
}
