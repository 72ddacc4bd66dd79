//! `roverlog bench --disk DIR`: what the data disk does with the daemon's kind of writes,
//! before a drive. Appends of each block size to a fresh file, an `fdatasync` every
//! `sync_bytes`, every latency recorded: percentiles of write and fsync latency, and the
//! throughput with the syncs included.
//!
//! Then the plan, measured rather than extrapolated: for each candidate `fsync_interval_ms`,
//! one interval's bytes of a sensor load of `load` bytes/s are written and synced a few
//! times and the worst round is kept. The writer is busy that long while the sensors go on
//! sending, so (the rule PX4 sizes its log buffer by, from the worst block write time) an
//! interval *holds* when its worst round fits in the interval, and the queues must absorb
//! the load over the worst round. What to set from these figures (and why) is the CLI's
//! advice (`src/cli/bench/disk.rs` of the `roverlog` package).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use roverlog_core::error::{IoContext, Result};

/// Latency percentiles, seconds.
fn percentiles(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    json!({"p50": q(0.5), "p99": q(0.99), "p999": q(0.999), "max": v[v.len() - 1], "count": v.len()})
}

/// Candidate `fsync_interval_ms` values of the plan.
pub const INTERVALS_MS: [u64; 5] = [100, 250, 500, 1000, 2000];
/// Rounds per candidate interval; the worst one counts.
pub const PLAN_ROUNDS: usize = 3;
/// The plan's write size (the daemon hands the kernel its buffers in pieces like this).
const PLAN_WRITE: usize = 1 << 20;
/// The written bytes' seed: not one repeated value, so a file system that compresses or
/// dedups would not flatter the disk.
const PATTERN_SEED: u64 = 0x243f_6a88_85a3_08d3;

/// Measures `dir`'s disk: `bytes` written per block size, an fdatasync every `sync_bytes`;
/// then the plan for `load` bytes/s (see the module doc). `"fits"`: some candidate interval
/// holds the load; `"sustains_load"`: every block size wrote faster than it.
pub fn measure(dir: &Path, bytes: u64, sync_bytes: u64, load: f64) -> Result<Value> {
    let mut sizes = Vec::new();
    let mut worst_stall: f64 = 0.0;
    let mut fsync_p999: f64 = 0.0;
    let mut slowest_mbps = f64::INFINITY;
    let mut fastest_mbps: f64 = 0.0;
    for block in [4096usize, 64 << 10, 1 << 20] {
        let path = dir.join(format!(
            ".roverlog-disk-bench-{}-{block}",
            std::process::id()
        ));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .at(&path)?;
        let buf = super::noise(block, PATTERN_SEED);
        let (mut writes, mut syncs) = (Vec::new(), Vec::new());
        let (mut written, mut since_sync) = (0u64, 0u64);
        let t0 = Instant::now();
        let r = (|| -> Result<()> {
            while written < bytes {
                let t = Instant::now();
                f.write_all(&buf).at(&path)?;
                writes.push(t.elapsed().as_secs_f64());
                written += block as u64;
                since_sync += block as u64;
                if since_sync >= sync_bytes {
                    let t = Instant::now();
                    f.sync_data().at(&path)?;
                    syncs.push(t.elapsed().as_secs_f64());
                    since_sync = 0;
                }
            }
            let t = Instant::now();
            f.sync_data().at(&path)?;
            syncs.push(t.elapsed().as_secs_f64());
            Ok(())
        })();
        let total = t0.elapsed().as_secs_f64().max(1e-9);
        drop(f);
        let _ = std::fs::remove_file(&path);
        r?;
        let w = percentiles(writes);
        let s = percentiles(syncs);
        let mbps = written as f64 / total / 1e6;
        let stall = w["p999"].as_f64().unwrap_or(0.0) + s["p999"].as_f64().unwrap_or(0.0);
        worst_stall = worst_stall.max(stall);
        fsync_p999 = fsync_p999.max(s["p999"].as_f64().unwrap_or(0.0));
        slowest_mbps = slowest_mbps.min(mbps);
        fastest_mbps = fastest_mbps.max(mbps);
        sizes.push(json!({"block_bytes": block, "write_s": w, "fsync_s": s, "mb_per_s": mbps}));
    }
    let plan = plan(dir, load, fastest_mbps * 1e6)?;
    Ok(json!({
        "dir": dir,
        "bytes_per_size": bytes,
        "sync_every_bytes": sync_bytes,
        "sizes": sizes,
        "load_bytes_per_s": load,
        "sustains_load": slowest_mbps * 1e6 >= load,
        "worst_stall_s": worst_stall,
        "fsync_p999_s": fsync_p999,
        "fits": plan.iter().any(|p| p["holds"] == true),
        "plan": plan,
    }))
}

/// For each of [`INTERVALS_MS`]: the worst of [`PLAN_ROUNDS`] rounds of writing and syncing
/// one interval's bytes at `load`, and whether it fits the interval.
fn plan(dir: &Path, load: f64, sustained: f64) -> Result<Vec<Value>> {
    let path = dir.join(format!(".roverlog-disk-plan-{}", std::process::id()));
    let mut f = OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(&path)
        .at(&path)?;
    let data = super::noise(PLAN_WRITE, PATTERN_SEED);
    let r = (|| -> Result<Vec<Value>> {
        let mut out = Vec::new();
        for ms in INTERVALS_MS {
            let bytes = (load * ms as f64 / 1e3).ceil().max(1.0) as u64;
            if load > sustained {
                // Faster than the disk writes at all: no interval holds, and measuring it
                // would only fill the disk.
                out.push(json!({"fsync_interval_ms": ms, "bytes_per_interval": bytes,
                    "holds": false, "why": format!(
                        "the load is over the disk's {:.1} MB/s", sustained / 1e6)}));
                continue;
            }
            f.set_len(0).at(&path)?;
            let (mut worst, mut worst_sync) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..PLAN_ROUNDS {
                let t = Instant::now();
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(PLAN_WRITE as u64) as usize;
                    f.write_all(&data[..n]).at(&path)?;
                    left -= n as u64;
                }
                let s = Instant::now();
                f.sync_data().at(&path)?;
                worst_sync = worst_sync.max(s.elapsed());
                worst = worst.max(t.elapsed());
            }
            let busy = worst.as_secs_f64();
            out.push(json!({"fsync_interval_ms": ms, "bytes_per_interval": bytes,
                "worst_round_s": busy, "worst_fsync_s": worst_sync.as_secs_f64(),
                "holds": busy < ms as f64 / 1e3}));
        }
        Ok(out)
    })();
    drop(f);
    let _ = std::fs::remove_file(&path);
    r
}
