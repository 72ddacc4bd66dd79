//! Issue 25: when `lzmaf` compression cannot keep up, the daemon stores frames uncompressed
//! in the same `.xz` framing instead of dropping them or stalling drivers, counts them in
//! `status` and `events.jsonl`, and `roverlog compact` recompresses them afterwards.
//!
//! Two lidars (red-rover's `rfl` u1, `nir` u2, `rng` u2 images, realistic frames from
//! `roverlog_bench::lidar`) each send at twice what an artificially slow compressor (test
//! knob `debug_compress_delay_ms`, a pool of one compress thread) can do, into queues with the `drop`
//! policy: a daemon that fell behind would drop, and a full queue would be seen as drops.

use crate::support::common::{assert_upstream_reads_same, roverlog};
use crate::support::daemon;

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use daemon::*;
use roverlog_bench::lidar::lidar_frame;
use roverlog_core::format::lzmaf::compact::stored_frames;
use serde_json::{json, Value};

/// Small images keep the debug build's real compression short; the knob sets the pace.
const ROWS: usize = 32;
const COLS: usize = 256;
/// Each channel frame's compression takes at least this long (the knob).
const DELAY_MS: u64 = 40;
const FRAMES: u64 = 60;
const SENSORS: [&str; 2] = ["lidar0", "lidar1"];

fn hello(sensor: &str) -> Value {
    let ch = |name: &str, ty: &str| json!({"name": name, "format": "lzmaf", "type": ty, "shape": [ROWS, COLS], "desc": "test"});
    json!({"roverlog": 1, "sensor": sensor,
           "channels": [ch("rfl", "u1"), ch("nir", "u2"), ch("rng", "u2")]})
}

/// Frame `i` of sensor `s`: (`rfl`, `nir`, `rng`), made once (ray-casting them in a debug
/// build is not free).
fn images(s: usize, i: u64) -> &'static [Vec<u8>; 3] {
    static FRAMES_OF: OnceLock<Vec<Vec<[Vec<u8>; 3]>>> = OnceLock::new();
    let all = FRAMES_OF.get_or_init(|| {
        (0..SENSORS.len())
            .map(|s| {
                (0..FRAMES)
                    .map(|i| {
                        let f = lidar_frame(ROWS, COLS, 1000 * s as u64 + i);
                        [f.rfl, f.nir, f.rng]
                    })
                    .collect()
            })
            .collect()
    });
    &all[s][i as usize]
}

fn frame_bytes() -> usize {
    4 + 8 + ROWS * COLS * 5
}

/// Sends `FRAMES` frames at twice the compression budget (three channel frames each take
/// `DELAY_MS` at least, so the budget is one frame per `3 x DELAY_MS`), then asks for
/// durability.
fn drive(d: &TestDaemon, s: usize) {
    let (mut c, r) = d.connect(&hello(SENSORS[s]));
    assert_eq!(r["ok"], true, "{r}");
    let period = Duration::from_millis(3 * DELAY_MS / 2);
    let t0 = Instant::now();
    for i in 0..FRAMES {
        let [a, b, g] = images(s, i);
        c.send(&frame(
            i as f64 * 0.1,
            None,
            &[(a, false), (b, false), (g, false)],
        ));
        let due = t0 + period * (i as u32 + 1);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    assert_eq!(c.sync(), FRAMES, "{} durable", SENSORS[s]);
}

/// Our reader gives back exactly what was sent, and Python's `lzma.decompress` of every
/// frame (upstream's reader's rules) agrees with ours.
fn check_reads_back(trace: &Path) {
    for (s, sensor) in SENSORS.iter().enumerate() {
        for (k, ch) in ["rfl", "nir", "rng"].iter().enumerate() {
            let (ts, data) = read_sensor(trace, sensor, ch);
            assert_eq!(ts.len() as u64, FRAMES, "{sensor}/{ch}");
            for (i, got) in data.iter().enumerate() {
                assert!(
                    *got == images(s, i as u64)[k],
                    "{sensor}/{ch} frame {i} differs"
                );
            }
        }
    }
    assert_upstream_reads_same(trace);
}

/// Stored-uncompressed frames per sensor, the same in each of its channels.
fn stored(trace: &Path, sensor: &str) -> u64 {
    let counts = stored_frames(&trace.join(sensor)).unwrap();
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(
        counts.iter().all(|c| c.stored == counts[0].stored),
        "a sample is stored in all its channels or none: {counts:?}"
    );
    counts[0].stored
}

#[test]
fn lidars_at_twice_the_compression_budget_lose_nothing_and_compact_recompresses() {
    // Storing starts when more than 24 frames wait (in the queue or the compression pool);
    // the 72 frames of headroom above that absorb what arrives while a frame is being
    // compressed (slowly: a debug build, the knob, a busy machine), so a drop would mean the
    // fallback failed, not a tight margin.
    let queue = 96 * frame_bytes();
    images(0, 0); // before the clock starts
    let d = TestDaemon::start(json!({
        "queue_bytes": queue, "max_frame_bytes": frame_bytes(), "queue_policy": "drop",
        "compress_threads": 1, "lzmaf_store_above": 0.25,
        "debug_compress_delay_ms": DELAY_MS}));
    let trace = d.trace_dir();
    std::thread::scope(|sc| {
        for s in 0..SENSORS.len() {
            let d = &d;
            sc.spawn(move || drive(d, s));
        }
    });
    let st = d.status();
    let stop = d.ctl(json!({"cmd": "stop"}));
    assert_eq!(stop["ok"], true, "{stop}");

    let events = events(&trace);
    for sensor in SENSORS {
        let s = &st["sensors"][sensor];
        assert_eq!(s["drops"], 0, "{sensor}: {s}");
        assert_eq!(s["samples"], FRAMES, "{sensor}: {s}");
        let counted = s["lzmaf_stored"].as_u64().unwrap();
        assert!(
            counted > 0,
            "{sensor}: at twice the budget some frames must have been stored: {s}"
        );
        assert_eq!(stored(&trace, sensor), counted, "{sensor}: status vs files");
        let logged: u64 = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::LzmafStored { sensor: s, frames } if s == sensor => Some(*frames),
                _ => None,
            })
            .sum();
        assert_eq!(logged, counted, "{sensor}: events.jsonl vs status");
    }
    check_reads_back(&trace);

    let run = roverlog(&[Path::new("compact"), &trace]);
    assert!(run.ok(), "{}", run.text());
    for sensor in SENSORS {
        assert!(
            run.out().contains(&format!("{sensor}/rng: ")),
            "{}",
            run.text()
        );
        assert_eq!(stored(&trace, sensor), 0, "{sensor} after compact");
    }
    assert!(
        !trace
            .join("_roverlog/compact")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "compact left its staging behind"
    );
    check_reads_back(&trace);
    let again = roverlog(&[Path::new("compact"), &trace]);
    assert!(
        again.ok() && again.out().contains("nothing to compact"),
        "{}",
        again.text()
    );
}

/// A trace still being recorded is not rewritten under the daemon.
#[test]
fn compact_refuses_a_trace_being_recorded() {
    let d = TestDaemon::start(json!({}));
    let trace = d.trace_dir();
    let run = roverlog(&[Path::new("compact"), &trace]);
    assert_eq!(run.code, 2, "{}", run.text());
    assert!(
        run.stderr.contains("is still being recorded"),
        "{}",
        run.stderr
    );
}
