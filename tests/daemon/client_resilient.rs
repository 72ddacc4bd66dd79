//! `roverlog_client::ResilientDriver` against the real daemon restarted while it sends: the
//! driver reconnects and every sample ends up on disk, as `roverlog.Driver` (its Python face,
//! python/tests/test_driver.py) promises. kill -9: the daemon resumes the same trace and the
//! driver resends exactly what it lacks. SIGTERM: a new trace, which gets every sample not
//! acknowledged durable.

use crate::support::daemon;

use std::path::PathBuf;

use daemon::*;
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

#[test]
fn after_a_clean_restart_every_sample_not_acknowledged_reaches_the_new_trace() {
    let mut d = TestDaemon::start(json!({"receive_timestamps": false}));
    let n = 3000u64;
    let meta = SensorMeta {
        channels: vec![(
            "i".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U8, vec![], ""),
        )],
    };
    let mut drv = ResilientDriver::connect(&d.ingest_path(), "gps", meta, false, &opts()).unwrap();
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
    let all = traces(&d);
    assert_eq!(all.len(), 2, "a clean stop ends the trace: {all:?}");
    let mut got = std::collections::BTreeSet::new();
    for t in &all {
        let (ts, v) = read_sensor(t, "gps", "i");
        for (t, b) in ts.iter().zip(v) {
            let i = u64::from_le_bytes(b[..].try_into().unwrap());
            assert_eq!(*t, 1.7e9 + i as f64, "sample {i} keeps its time");
            got.insert(i);
        }
    }
    assert_eq!(
        got,
        (0..n).collect(),
        "every sample is in one trace or the other"
    );
    // Acknowledged durable before the stop: not sent again.
    let (ts, _) = read_sensor(&all[1], "gps", "i");
    assert!(ts[0] >= 1.7e9 + 1000.0, "the new trace starts at {}", ts[0]);
}
