//! `roverlog bench --disk DIR`: what the data disk does with the daemon's kind of writes,
//! before a drive. Appends of each block size to a fresh file, an `fdatasync` every
//! `sync_bytes`, every latency recorded: percentiles of write and fsync latency, and the
//! throughput with the syncs included. From them, for a sensor load of `load` bytes/s, the
//! queue budget that rides out the worst stall seen (twice the load times the p99.9 of
//! write + fsync latency, at least 4 MiB) and the shortest fsync interval whose p99.9 fsync
//! takes under half of it (PX4 sizes its log buffer from the worst block write time the same
//! way).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{IoContext, Result};

/// Latency percentiles, seconds.
fn percentiles(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    json!({"p50": q(0.5), "p99": q(0.99), "p999": q(0.999), "max": v[v.len() - 1], "count": v.len()})
}

/// Measures `dir`'s disk: `bytes` written per block size, an fdatasync every `sync_bytes`.
pub fn measure(dir: &Path, bytes: u64, sync_bytes: u64, load: f64) -> Result<Value> {
    let mut sizes = Vec::new();
    let mut worst_stall: f64 = 0.0;
    let mut fsync_p999: f64 = 0.0;
    let mut slowest_mbps = f64::INFINITY;
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
        let buf = vec![0x5Au8; block];
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
        sizes.push(json!({"block_bytes": block, "write_s": w, "fsync_s": s, "mb_per_s": mbps}));
    }
    let queue = ((2.0 * load * worst_stall).ceil() as u64).max(4 << 20);
    let interval = [100u64, 250, 500, 1000, 2000, 5000]
        .into_iter()
        .find(|ms| fsync_p999 < Duration::from_millis(*ms).as_secs_f64() / 2.0)
        .unwrap_or(10_000);
    Ok(json!({
        "dir": dir,
        "bytes_per_size": bytes,
        "sync_every_bytes": sync_bytes,
        "sizes": sizes,
        "load_bytes_per_s": load,
        "sustains_load": slowest_mbps * 1e6 >= load,
        "recommended": {"queue_bytes": queue, "fsync_interval_ms": interval,
                        "worst_stall_s": worst_stall},
    }))
}
