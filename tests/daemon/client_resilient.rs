//! `roverlog_client::ResilientDriver` against the real daemon restarted while it sends: the
//! driver reconnects and every sample ends up on disk exactly once, as `roverlog.Driver` (its
//! Python face, python/tests/test_driver.py) promises. kill -9: the daemon resumes the same
//! trace and the driver resends exactly what it lacks. SIGTERM: the daemon tells the driver its
//! final durable count (protocol.md 6.1) and the new trace gets exactly the samples the old
//! one lacks, whether the driver was idle or sending at the moment of the stop. Also: the
//! driver says when the daemon records nothing, and gives up on a missing socket in time.

use crate::support::daemon;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_client::Error;
use roverlog_client::{ResilientDriver, ResilientOptions};
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};
use serde_json::json;

fn imu() -> SensorMeta {
    SensorMeta {
        channels: vec![
            (
                "acc".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
            ),
            (
                "n".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::U8, vec![], ""),
            ),
        ],
    }
}

/// Small batches: writes go out all along, so the kill finds some of ours written and some
/// in flight.
fn opts() -> ResilientOptions {
    ResilientOptions {
        max_bytes: 4096,
        ..Default::default()
    }
}

fn acc(i: u64) -> Vec<u8> {
    [i as f32, -(i as f32), 0.5 * i as f32]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

fn traces(d: &TestDaemon) -> Vec<PathBuf> {
    let mut t: Vec<PathBuf> = std::fs::read_dir(d.data_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    t.sort();
    t
}

#[test]
fn after_a_kill_9_and_restart_the_trace_holds_every_sample_once_in_order() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let n = 3000u64;
    let mut drv = ResilientDriver::connect(&d.ingest_path(), "imu", imu(), true, &opts()).unwrap();
    let trace = d.trace_dir();
    for i in 0..n {
        if i == 1000 {
            assert_eq!(drv.sync().unwrap(), 1000);
        }
        if i == 2000 {
            d.kill9();
            d.spawn();
        }
        drv.send(1.7e9 + i as f64 * 0.01, None, &[&acc(i), &i.to_le_bytes()])
            .unwrap();
    }
    assert_eq!(drv.sync().unwrap(), n, "{}", d.log());
    assert_eq!(d.trace_dir(), trace, "kill -9 resumes the same trace");
    // The driver resent only what the daemon lacked: nothing it had was sent twice (with
    // `dedup`, which the driver asks for with sequence numbers, a repeat would be counted).
    assert_eq!(d.status()["sensors"]["imu"]["repeats"], 0);
    drop(drv);
    assert!(d.stop().success(), "{}", d.log());
    let (ts, nn) = read_sensor(&trace, "imu", "n");
    let want: Vec<f64> = (0..n).map(|i| 1.7e9 + i as f64 * 0.01).collect();
    assert_eq!(ts, want);
    let nn: Vec<u64> = nn
        .iter()
        .map(|b| u64::from_le_bytes(b[..].try_into().unwrap()))
        .collect();
    assert_eq!(nn, (0..n).collect::<Vec<_>>());
    let (_, a) = read_sensor(&trace, "imu", "acc");
    assert!((0..n).all(|i| a[i as usize] == acc(i)), "acc values");
}

fn gps() -> SensorMeta {
    SensorMeta {
        channels: vec![(
            "i".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U8, vec![], ""),
        )],
    }
}

/// Every `gps` sample `i` in every trace, with how many times it is there; each keeps its
/// time.
fn gps_counts(d: &TestDaemon) -> (Vec<PathBuf>, BTreeMap<u64, usize>) {
    let all = traces(d);
    let mut got = BTreeMap::new();
    for t in &all {
        let (ts, v) = read_sensor(t, "gps", "i");
        for (t, b) in ts.iter().zip(v) {
            let i = u64::from_le_bytes(b[..].try_into().unwrap());
            assert_eq!(*t, 1.7e9 + i as f64, "sample {i} keeps its time");
            *got.entry(i).or_insert(0) += 1;
        }
    }
    (all, got)
}

fn assert_exactly_once(got: &BTreeMap<u64, usize>, n: u64) {
    let twice: Vec<_> = got.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "samples in both traces: {twice:?}");
    let missing: Vec<u64> = (0..n).filter(|i| !got.contains_key(i)).collect();
    assert!(missing.is_empty(), "samples in neither trace: {missing:?}");
    assert_eq!(got.len() as u64, n);
}

#[test]
fn after_a_clean_restart_every_sample_is_in_exactly_one_trace() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let n = 3000u64;
    let mut drv = ResilientDriver::connect(&d.ingest_path(), "gps", gps(), false, &opts()).unwrap();
    for i in 0..n {
        if i == 1000 {
            drv.sync().unwrap();
        }
        if i == 2000 {
            assert!(d.stop().success(), "{}", d.log());
            d.spawn();
        }
        drv.send(1.7e9 + i as f64, None, &[&i.to_le_bytes()])
            .unwrap();
    }
    let durable = drv.sync().unwrap();
    assert_eq!(
        durable,
        drv.expected_durable(),
        "everything sent is durable"
    );
    drop(drv);
    assert!(d.stop().success(), "{}", d.log());
    let (all, got) = gps_counts(&d);
    assert_eq!(all.len(), 2, "a clean stop ends the trace: {all:?}");
    assert_exactly_once(&got, n);
    // The stopped trace holds everything the driver had written before the stop (the final
    // count covered it): the new one starts where it ends.
    let (old, _) = read_sensor(&all[0], "gps", "i");
    let (new, _) = read_sensor(&all[1], "gps", "i");
    assert!(old.len() >= 1000, "{}", old.len());
    assert_eq!(new[0], 1.7e9 + old.len() as f64);
}

#[test]
fn a_sigterm_while_the_driver_sends_leaves_every_sample_in_exactly_one_trace() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let n = 20_000u64;
    let socket = d.ingest_path();
    // Sends all along (small batches, a short pause every 20 samples) and syncs every 2000:
    // the stop finds frames written, in the socket and still in the driver.
    let sender = std::thread::spawn(move || {
        let mut drv = ResilientDriver::connect(&socket, "gps", gps(), false, &opts()).unwrap();
        for i in 0..n {
            if i % 2000 == 1999 {
                drv.sync().unwrap();
            }
            if i % 20 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            drv.send(1.7e9 + i as f64, None, &[&i.to_le_bytes()])
                .unwrap();
        }
        let durable = drv.sync().unwrap();
        (durable, drv.expected_durable())
    });
    // Stop once the driver is well under way, start again at once.
    let t0 = Instant::now();
    d.wait_status("the driver half way", |s| {
        s["sensors"]["gps"]["samples"].as_u64() >= Some(n / 4)
    });
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert!(d.stop().success(), "{}", d.log());
    d.spawn();
    let (durable, expected) = sender.join().unwrap();
    assert_eq!(durable, expected, "everything sent is durable");
    assert!(d.stop().success(), "{}", d.log());
    let (all, got) = gps_counts(&d);
    assert_eq!(all.len(), 2, "{all:?}");
    let (old, _) = read_sensor(&all[0], "gps", "i");
    assert!(
        old.len() as u64 >= n / 4 && (old.len() as u64) < n,
        "the stop came mid-stream: {} samples in the first trace",
        old.len()
    );
    assert_exactly_once(&got, n);
}

#[test]
fn across_a_rotation_then_a_kill_9_every_sample_is_in_exactly_one_trace() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let n = 3000u64;
    let mut drv = ResilientDriver::connect(&d.ingest_path(), "gps", gps(), false, &opts()).unwrap();
    for i in 0..n {
        if i == 1000 {
            assert_eq!(d.ctl(json!({"cmd": "rotate"}))["ok"], true);
        }
        if i == 1500 {
            // The reply names the trace the count is in: the driver learns of the rotation.
            let r = drv.sync_reply().unwrap();
            assert_eq!(r.trace.as_deref(), Some(drv.trace()));
            assert_eq!(drv.retained_bytes(), 0, "everything sent is settled");
            assert_eq!(drv.expected_durable(), r.durable);
        }
        if i == 2000 {
            d.kill9();
            d.spawn();
        }
        drv.send(1.7e9 + i as f64, None, &[&i.to_le_bytes()])
            .unwrap();
    }
    let durable = drv.sync().unwrap();
    assert_eq!(durable, drv.expected_durable(), "{}", d.log());
    drop(drv);
    assert!(d.stop().success(), "{}", d.log());
    let (all, got) = gps_counts(&d);
    assert_eq!(all.len(), 2, "the rotation's two parts: {all:?}");
    assert_exactly_once(&got, n);
}

#[test]
fn while_nothing_records_the_driver_says_its_samples_are_discarded() {
    let d = TestDaemon::start(json!({"receive_timestamps": false}));
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], true);
    let mut drv = ResilientDriver::connect(&d.ingest_path(), "gps", gps(), false, &opts()).unwrap();
    assert!(!drv.recording(), "the hello said no trace is open");
    for i in 0..10u64 {
        drv.send(1.7e9 + i as f64, None, &[&i.to_le_bytes()])
            .unwrap();
    }
    let r = drv.sync_reply().unwrap();
    assert_eq!((r.durable, r.recording), (0, false));
    let why = drv.not_recording().expect("a reason while not recording");
    assert!(
        why.contains("not recording") && why.contains("discarded") && why.contains("\"gps\""),
        "{why}"
    );
    assert!(
        why.contains(&d.ingest_path().display().to_string()),
        "{why}"
    );
    d.wait_status("the discarded samples counted", |s| {
        s["sensors"]["gps"]["discarded"] == 10
    });
    assert_eq!(d.ctl(json!({"cmd": "start"}))["ok"], true);
    drv.send(1.7e9 + 10.0, None, &[&10u64.to_le_bytes()])
        .unwrap();
    let r = drv.sync_reply().unwrap();
    assert!(r.recording, "{r:?}");
    assert_eq!(
        r.durable, 1,
        "the new trace holds the one sample sent while recording"
    );
    assert_eq!(drv.not_recording(), None);
    assert_eq!(drv.trace(), r.trace.unwrap());
    assert_eq!(
        (drv.expected_durable(), drv.retained_bytes()),
        (1, 0),
        "the discarded samples are not kept for a resend into the new trace"
    );
}

#[test]
fn a_missing_socket_is_waited_for_within_the_connect_timeout_then_named() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run").join("ingest.sock");
    let o = ResilientOptions {
        connect_timeout: Some(Duration::from_millis(600)),
        wait_notice: Duration::from_millis(200),
        ..opts()
    };
    let t0 = Instant::now();
    let mut told = Vec::new();
    let e = ResilientDriver::connect_notify(&socket, "gps", gps(), false, &o, &mut |e| {
        told.push((t0.elapsed(), e.to_string()));
        Ok(())
    })
    .err()
    .unwrap();
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(told.len(), 1, "told once: {told:?}");
    assert!(told[0].0 >= Duration::from_millis(200), "{told:?}");
    assert!(matches!(e, Error::NoDaemon { missing: true, .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(&socket.display().to_string()) && msg.contains("No such file"),
        "{msg}"
    );
}
