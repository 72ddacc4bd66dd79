//! Soak (issue 6): 16 sensors (4 IMU-like 1 kHz small frames, 4 lidar-like 20 Hz `lzmaf`,
//! 4 camera-like 30 Hz `jpg`, 4 radar-like 20 Hz `raw`) into one daemon with the `block`
//! policy and time-based rotation. While it runs, the daemon's RSS and open descriptors are
//! sampled, and every trace the daemon finishes is checked (every sample's seq continues the
//! previous trace's, `ts` and headers match, every 16th sample byte for byte) and deleted, so
//! a long run does not fill the disk. At the end: zero drops, every sample sent is on disk, and
//! the daemon's counts agree with the files.
//!
//! CI runs a smoke version (small frames, a few seconds). The long run, at full sizes:
//! `ROVERLOG_TORTURE=long cargo test --release --test torture -- soak:: --nocapture`
//! (`ROVERLOG_SOAK_SECS`, default 300 in a long run). Speed is reported, never asserted.

use crate::support::daemon;
use crate::support::torture;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use daemon::{events, Count, Event, TestDaemon};
use roverlog_bench::procfs::status_bytes;
use serde_json::{json, Value};
use torture::*;

fn load(full: bool) -> Vec<Spec> {
    // Full sizes in the long run; a scaled-down shape for the CI smoke.
    let (lidar, cam, radar) = if full {
        (256 << 10, (40_000, 60_000), 768 << 10)
    } else {
        (16 << 10, (2_000, 5_000), 48 << 10)
    };
    let mut v = Vec::new();
    for i in 0..4u64 {
        v.push(Spec::new(
            &format!("imu{i}"),
            20 + i,
            vec![Chan::Raw(48)],
            1000.0,
            (500, 2000),
        ));
        v.push(Spec::new(
            &format!("lidar{i}"),
            30 + i,
            vec![Chan::Lzmaf(lidar)],
            20.0,
            (10, 40),
        ));
        v.push(Spec::new(
            &format!("cam{i}"),
            40 + i,
            vec![Chan::Jpg(cam.0, cam.1)],
            30.0,
            (15, 60),
        ));
        v.push(Spec::new(
            &format!("radar{i}"),
            50 + i,
            vec![Chan::Raw(radar)],
            20.0,
            (10, 40),
        ));
    }
    v
}

/// A trace is finished when its last `start` is followed by a `stop`.
fn finished(trace: &Path) -> bool {
    let ev = events(trace);
    let last_stop = ev
        .iter()
        .rposition(|e| matches!(e.event, Event::Stop { .. }));
    let last_start = ev
        .iter()
        .rposition(|e| matches!(e.event, Event::Start { .. }));
    last_stop.is_some() && last_stop > last_start
}

/// Checks one trace of every sensor, continuing each sensor's seq; returns the counts.
fn check_trace(trace: &Path, specs: &[Spec], next: &mut [u64]) -> Vec<u64> {
    specs
        .iter()
        .zip(next.iter_mut())
        .map(|(spec, next)| {
            let got = verify_sensor(trace, spec, Some(*next), 0, 16)
                .unwrap_or_else(|e| panic!("{}: {e}", trace.display()));
            *next += got.len;
            got.len
        })
        .collect()
}

/// The trace's last `stop` line names each sensor with its count on disk (`counts`, from
/// `check_trace`); a sensor it does not name has nothing there.
fn check_stop_record(trace: &Path, specs: &[Spec], counts: &[u64]) {
    let ev = events(trace);
    let stop = ev
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::Stop { sensors, .. } => Some(sensors),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{}: no stop line", trace.display()));
    for (spec, n) in specs.iter().zip(counts) {
        let said = match stop.get(&spec.name) {
            Some(Count::Samples { samples }) => *samples,
            _ => 0,
        };
        assert_eq!(
            said,
            *n,
            "{} in {}: stop line vs files: {stop:?}",
            spec.name,
            trace.display()
        );
    }
}

/// When the trace's last `stop` was written (a rotation is complete once it is).
fn stop_time(trace: &Path) -> f64 {
    events(trace)
        .iter()
        .rev()
        .find(|e| matches!(e.event, Event::Stop { .. }))
        .map(|e| e.t)
        .unwrap_or(f64::MAX)
}

struct Sample {
    at: f64,
    rss: u64,
    fds: u64,
    queued: u64,
}

#[test]
fn soak_sixteen_sensors_flat_memory_no_drops_counts_agree() {
    let full = long();
    let secs = knob("ROVERLOG_SOAK_SECS", 5, 300);
    let rotate = if full { 30 } else { 2 };
    let seed = seed("torture_soak");
    let mut d = TestDaemon::start(json!({
        "queue_policy": "block", "rotate_seconds": rotate, "stats_interval_ms": 5000,
    }));
    let pid = d.child.as_ref().unwrap().id();
    let specs = load(full);
    let ctl = Arc::new(Control::default());
    let mut drivers: Vec<DriverThread> = specs
        .iter()
        .map(|s| spawn_driver(&d.ingest_path(), s.clone(), seed, ctl.clone(), None, false))
        .collect();

    let t0 = Instant::now();
    let mut next = vec![0u64; specs.len()];
    let mut checked: Vec<PathBuf> = Vec::new();
    let mut traces_checked = 0;
    // When the newest trace the daemon finished was closed (its rotation complete).
    let mut last_stop_t = 0f64;
    let sampling = AtomicBool::new(true);
    let samples: Vec<Sample> = std::thread::scope(|scope| {
        // RSS, descriptors and queue fill every second, on their own thread: checking a
        // finished trace takes a while.
        let sampler = scope.spawn(|| {
            let mut v = Vec::new();
            while sampling.load(SeqCst) {
                let st = d.status();
                let queued = st["sensors"]
                    .as_object()
                    .map(|m| {
                        m.values()
                            .map(|s| s["queue_bytes"].as_u64().unwrap_or(0))
                            .sum()
                    })
                    .unwrap_or(0);
                v.push(Sample {
                    at: t0.elapsed().as_secs_f64(),
                    rss: status_bytes(pid, "VmRSS").unwrap_or(0),
                    fds: fd_count(pid).unwrap_or(0),
                    queued,
                });
                std::thread::sleep(Duration::from_secs(1));
            }
            v
        });
        while t0.elapsed() < Duration::from_secs(secs) {
            std::thread::sleep(Duration::from_secs(1));
            // Check and delete the traces the daemon finished (oldest first).
            let current = d.status()["trace_dir"].as_str().map(PathBuf::from);
            let mut traces: Vec<PathBuf> = std::fs::read_dir(d.data_root())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| Some(p) != current.as_ref() && !checked.contains(p))
                .collect();
            traces.sort();
            for t in traces {
                if !finished(&t) {
                    break;
                }
                let counts = check_trace(&t, &specs, &mut next);
                check_stop_record(&t, &specs, &counts);
                last_stop_t = last_stop_t.max(stop_time(&t));
                std::fs::remove_dir_all(&t).unwrap();
                checked.push(t);
                traces_checked += 1;
            }
        }
        sampling.store(false, SeqCst);
        sampler.join().unwrap()
    });
    let run = t0.elapsed();
    // Counters while every driver is still connected: a rotation after a driver left ends
    // that sensor with the trace it has files in, and later statuses no longer list it.
    let live = d.status();
    stop_drivers(&ctl, &mut drivers);
    let v = violations(&drivers);
    assert!(v.is_empty(), "{v:#?}");
    let status_t = roverlog_daemon::events::now_epoch();
    let st = d.status();
    let hwm = status_bytes(pid, "VmHWM").unwrap_or(0);
    let stop = d.ctl(json!({"cmd": "stop"}));
    assert_eq!(stop["ok"], true, "{stop}");
    let last = d.data_root().join(stop["trace"].as_str().unwrap());
    // Traces finished between the last check and the stop, then the last one.
    let mut rest: Vec<PathBuf> = std::fs::read_dir(d.data_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !checked.contains(p))
        .collect();
    rest.sort();
    assert_eq!(rest.last(), Some(&last));
    let mut last_counts = Vec::new();
    for t in &rest {
        last_counts = check_trace(t, &specs, &mut next);
        check_stop_record(t, &specs, &last_counts);
        traces_checked += 1;
        if *t != last {
            last_stop_t = last_stop_t.max(stop_time(t));
        }
    }
    // A rotation may fall between the status and the stop, and during a rotation status
    // already names the new trace while some sensors still count the old one: compare the
    // status with the files only when the last rotation had completed before it was taken.
    let status_is_of_last = st["trace"] == stop["trace"] && last_stop_t < status_t;
    assert!(d.stop().success(), "{}", d.log());

    let mut report = Vec::new();
    for (i, dr) in drivers.iter().enumerate() {
        let name = &dr.spec.name;
        let sent = dr.state.sent.load(SeqCst);
        assert_eq!(
            next[i], sent,
            "{name}: samples on disk over all traces vs sent"
        );
        let s: &Value = &live["sensors"][name];
        assert_eq!(s["drops"], 0, "{name}: {s}");
        assert_eq!(s["gaps"], 0, "{name}: {s}");
        assert_eq!(s["failed"], Value::Null, "{name}: {s}");
        let after = &st["sensors"][name];
        if !after.is_null() {
            assert_eq!(after["drops"], 0, "{name}: {after}");
            assert_eq!(after["gaps"], 0, "{name}: {after}");
        }
        // A sensor whose driver left before a rotation ended with the trace before: the stop
        // reply does not name it, and it has no files in the last trace.
        let said = stop["sensors"][name]["samples"].as_u64().unwrap_or(0);
        assert_eq!(
            said, last_counts[i],
            "{name}: stop reply vs files of the last trace ({stop})"
        );
        if status_is_of_last {
            // A sensor the status no longer lists has no samples in its trace.
            let n = after["samples"].as_u64().unwrap_or(0);
            assert_eq!(n, last_counts[i], "{name}: status vs files ({after})");
        }
        report.push((
            name.clone(),
            sent,
            sent as f64 / run.as_secs_f64(),
            dr.spec.rate_hz,
            dr.state.write_wait_us.load(SeqCst) as f64 / 1e6,
            dr.state.sync_wait_us.load(SeqCst) as f64 / 1e6,
            s["queue_high_water"].as_u64().unwrap(),
        ));
    }
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let rss: Vec<u64> = samples.iter().map(|s| s.rss).collect();
    let fds: Vec<u64> = samples.iter().map(|s| s.fds).collect();
    let qs: Vec<u64> = samples.iter().map(|s| s.queued).collect();
    eprintln!(
        "torture_soak: seed {seed}, {} s, {} sensors, {} traces checked (rotate every {rotate} s), \
         {} sizes",
        run.as_secs(),
        specs.len(),
        traces_checked,
        if full { "full" } else { "smoke" }
    );
    eprintln!(
        "  daemon RSS MiB first {:.1} last {:.1} max {:.1} (VmHWM {:.1}); open fds first {} last {} max {}; \
         queued bytes (all sensors) max {:.1} MiB",
        mib(rss[0]),
        mib(*rss.last().unwrap()),
        mib(*rss.iter().max().unwrap()),
        mib(hwm),
        fds[0],
        fds.last().unwrap(),
        fds.iter().max().unwrap(),
        mib(*qs.iter().max().unwrap()),
    );
    for (name, sent, rate, target, wait, sync, hw) in report {
        eprintln!(
            "  {name:<7} {sent:>8} samples {rate:>8.1}/s (target {target}) blocked in write {wait:>6.2} s, \
             waiting for durable {sync:>6.2} s, queue high water {:.1} MiB",
            mib(hw)
        );
    }
    for s in &samples {
        eprintln!(
            "  t {:>6.1} s rss {:>7.1} MiB fds {:>4} queued {:>7.1} MiB",
            s.at,
            mib(s.rss),
            s.fds,
            mib(s.queued)
        );
    }
}
