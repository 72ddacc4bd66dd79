//! Issue 35: the daemon's one compression pool keeps its order and durable-count promises
//! under many threads. 16 compression threads (on however few cores), three `lzmaf` sensors
//! of different frame sizes whose frames compress in very different times (so they finish
//! out of order), a byte bound small enough to be reached, kill -9 in the middle of a burst:
//! every file is byte for byte a prefix of what a single-threaded daemon wrote from the same
//! frames, holds at least the acknowledged durable count, and after the restart's recovery is
//! exactly the single-threaded files cut at a whole frame.

use crate::support::daemon::*;

use std::path::Path;

use roverlog_core::format::lzmaf::{index_path, parse_index};
use serde_json::{json, Value};

/// Sensors and their frame sizes.
const SENSORS: [(&str, usize); 3] = [("lidar_s", 2_000), ("lidar_m", 11_000), ("lidar_l", 37_000)];
const FRAMES: u64 = 48;
/// Frames per sensor sent before the kill; the last `BURST` of them without a sync.
const KILL_AT: u64 = 36;
const BURST: u64 = 8;

fn hello(sensor: &str, n: usize) -> Value {
    json!({"roverlog": 1, "sensor": sensor, "channels": [
        {"name": "z", "format": "lzmaf", "type": "u1", "shape": [n], "desc": "test"}]})
}

/// Frame `i` of sensor `s`: a random share (5-95 %) of noise in runs of a slow ramp, so some
/// frames compress many times faster than others.
fn content(s: usize, i: u64, n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (s as u64) << 32 ^ i;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let noise = 5 + next() % 91;
    (0..n)
        .map(|k| {
            if next() % 100 < noise {
                next() as u8
            } else {
                (k / 32) as u8
            }
        })
        .collect()
}

fn send(c: &mut Driver, s: usize, i: u64) {
    let n = SENSORS[s].1;
    c.send(&frame(i as f64, None, &[(&content(s, i, n), false)]));
}

/// A sensor's `z` channel: data file and index file bytes.
fn files(trace: &Path, sensor: &str) -> (Vec<u8>, Vec<u8>) {
    let data = trace.join(sensor).join("z");
    let read = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (read(&data), read(&index_path(&data)))
}

fn compression_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.starts_with("compress-"))
        })
        .count()
}

#[test]
fn sixteen_threads_write_the_single_threaded_bytes_in_order_and_keep_the_durable_count() {
    // The reference: one compression thread, every frame, a clean stop.
    let mut one = TestDaemon::start(json!({"compress_threads": 1, "lzmaf_store_above": 1.0}));
    let reference = one.trace_dir();
    let mut drivers: Vec<Driver> = SENSORS
        .iter()
        .map(|&(s, n)| one.connect(&hello(s, n)).0)
        .collect();
    for i in 0..FRAMES {
        for (s, c) in drivers.iter_mut().enumerate() {
            send(c, s, i);
        }
    }
    for c in &mut drivers {
        assert_eq!(c.sync(), FRAMES);
    }
    assert!(one.stop().success(), "{}", one.log());
    let want: Vec<(Vec<u8>, Vec<u64>)> = SENSORS
        .iter()
        .map(|(s, _)| {
            let (data, index) = files(&reference, s);
            let offsets = parse_index(&index);
            assert_eq!(offsets.len() as u64, FRAMES + 1, "{s}: reference index");
            assert_eq!(*offsets.last().unwrap(), data.len() as u64, "{s}");
            (data, offsets)
        })
        .collect();

    // 16 threads, at most 100 kB in flight (under three of the largest frames).
    let mut d = TestDaemon::start(json!({
        "compress_threads": 16, "compress_inflight_bytes": 100_000,
        "lzmaf_store_above": 1.0, "fsync_interval_ms": 100, "flush_interval_ms": 20}));
    let pid = d.child.as_ref().unwrap().id();
    assert_eq!(compression_threads(pid), 16, "the pool's threads");
    let trace = d.trace_dir();
    let mut drivers: Vec<Driver> = SENSORS
        .iter()
        .map(|&(s, n)| d.connect(&hello(s, n)).0)
        .collect();
    let mut durable = [0u64; SENSORS.len()];
    for i in 0..KILL_AT {
        for (s, c) in drivers.iter_mut().enumerate() {
            send(c, s, i);
        }
        if i % 4 == 3 && i < KILL_AT - BURST {
            for (s, c) in drivers.iter_mut().enumerate() {
                durable[s] = c.sync();
                assert_eq!(
                    durable[s],
                    i + 1,
                    "{}: a sync counts every frame before it",
                    SENSORS[s].0
                );
            }
        }
    }
    // The burst's frames are in the queues and the pool now.
    d.kill9();
    for (s, (sensor, _)) in SENSORS.iter().enumerate() {
        let (data, index) = files(&trace, sensor);
        let (want_data, want_offsets) = &want[s];
        let want_index: Vec<u8> = want_offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        assert!(
            want_data.starts_with(&data),
            "{sensor}: after kill -9 the {} data bytes are not a prefix of the single-threaded run's {} (first difference at {:?})",
            data.len(),
            want_data.len(),
            data.iter().zip(want_data).position(|(a, b)| a != b)
        );
        assert!(
            want_index.starts_with(&index),
            "{sensor}: the index is not the single-threaded run's"
        );
        let dur = durable[s] as usize;
        eprintln!(
            "{sensor}: after kill -9: {} whole frames indexed, {dur} acknowledged durable, {KILL_AT} sent",
            (index.len() / 8).saturating_sub(1)
        );
        assert!(
            index.len() / 8 > dur && data.len() as u64 >= want_offsets[dur],
            "{sensor}: {} index entries and {} data bytes on disk, {dur} frames were acknowledged durable",
            index.len() / 8,
            data.len()
        );
    }

    // The restart recovers the torn tails: whole frames, the single-threaded bytes exactly.
    d.spawn();
    assert_eq!(d.trace_dir(), trace, "the restart resumes the trace");
    assert!(d.stop().success(), "{}", d.log());
    for (s, (sensor, n)) in SENSORS.iter().enumerate() {
        let (data, index) = files(&trace, sensor);
        let (want_data, want_offsets) = &want[s];
        let len = index.len() / 8 - 1;
        assert!(
            len as u64 >= durable[s],
            "{sensor}: {len} frames after recovery, {} durable",
            durable[s]
        );
        assert!(
            len as u64 <= KILL_AT,
            "{sensor}: {len} frames, only {KILL_AT} sent"
        );
        assert_eq!(
            parse_index(&index),
            want_offsets[..=len],
            "{sensor}: index after recovery"
        );
        assert!(
            data == want_data[..want_offsets[len] as usize],
            "{sensor}: data after recovery"
        );
        let (ts, z) = read_sensor(&trace, sensor, "z");
        assert_eq!(
            ts,
            (0..len).map(|i| i as f64).collect::<Vec<_>>(),
            "{sensor}: ts"
        );
        assert_eq!(
            z.last(),
            (len > 0).then(|| content(s, len as u64 - 1, *n)).as_ref()
        );
    }
}
