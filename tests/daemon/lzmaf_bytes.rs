//! Issue 25: the daemon's glibc thresholds (`roverlog_daemon::malloc_policy`) let the `.xz`
//! encoder's per-frame tables reuse the memory the previous frame's freed (zeroed again by
//! calloc) instead of fresh pages. Whatever memory the encoder gets, an `lzmaf` frame must be
//! the bytes a fresh encoder in a fresh process makes of it, and upstream's reader
//! (`lzma.decompress`) must read it.

use crate::support::common::assert_upstream_reads_same;
use crate::support::daemon::*;

use roverlog_bench::lidar::lidar_frame;
use roverlog_core::format::lzma;
use serde_json::{json, Value};

const FRAMES: u64 = 8;
/// Two lidars of different sizes, so each compress thread's memory is reused dirty, by
/// frames of another size.
const SENSORS: [(&str, usize, usize); 2] = [("lidar_a", 64, 512), ("lidar_b", 32, 256)];
const CHANNELS: [&str; 3] = ["rfl", "nir", "rng"];

fn hello(sensor: &str, rows: usize, cols: usize) -> Value {
    let ch = |name: &str, ty: &str| json!({"name": name, "format": "lzmaf", "type": ty, "shape": [rows, cols], "desc": "test"});
    json!({"roverlog": 1, "sensor": sensor,
           "channels": [ch("rfl", "u1"), ch("nir", "u2"), ch("rng", "u2")]})
}

#[test]
fn lzmaf_frames_are_a_fresh_encoders_bytes_and_upstream_reads_them() {
    // Every frame compressed (the stored fallback off), on two threads per writer.
    let d = TestDaemon::start(json!({"compress_threads": 2, "lzmaf_store_above": 1.0}));
    let trace = d.trace_dir();
    // Per sensor, per channel: the file a fresh encoder per frame makes.
    let mut want: Vec<[Vec<u8>; 3]> = Vec::new();
    let mut drivers = Vec::new();
    for (name, rows, cols) in SENSORS {
        let (c, r) = d.connect(&hello(name, rows, cols));
        assert_eq!(r["ok"], true, "{r}");
        drivers.push(c);
        want.push(Default::default());
    }
    // The sensors' frames interleaved, so both writers compress at the same time.
    for i in 0..FRAMES {
        for (s, (_, rows, cols)) in SENSORS.iter().enumerate() {
            let f = lidar_frame(*rows, *cols, 7 * i + 1000 * s as u64);
            let images = [&f.rfl, &f.nir, &f.rng];
            for (file, img) in want[s].iter_mut().zip(images) {
                file.extend(lzma::compress(img, lzma::DEFAULT_PRESET));
            }
            let channels: Vec<(&[u8], bool)> = images.iter().map(|b| (&b[..], false)).collect();
            drivers[s].send(&frame(i as f64 * 0.1, None, &channels));
        }
    }
    for (c, (name, ..)) in drivers.iter_mut().zip(SENSORS) {
        assert_eq!(c.sync(), FRAMES, "{name}: durable frames");
    }
    let stop = d.ctl(json!({"cmd": "stop"}));
    assert_eq!(stop["ok"], true, "{stop}");
    for (s, (name, ..)) in SENSORS.iter().enumerate() {
        for (k, ch) in CHANNELS.iter().enumerate() {
            let path = trace.join(name).join(ch);
            let got = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                got == want[s][k],
                "{name}/{ch}: the daemon's {} bytes are not a fresh encoder's {}",
                got.len(),
                want[s][k].len()
            );
        }
    }
    assert_upstream_reads_same(&trace);
}
