//! fsyncing a blob channel's files (`jpg`, `npz`): one at a time (what the writer did) against
//! the files of a period fsynced together, same run, on the data disk (the current
//! directory's filesystem, not /tmp).
//!
//! `cargo bench --bench blob_sync` (env `BLOB_BENCH_DIR` for another disk). Eight cameras at
//! 30 fps are eight writers, each syncing its 30 files of a one-second period: each mode writes
//! 8 x 300 files of 60 KB from 8 threads, a sync every 30 files, and reports files/s.
//!
//! `cargo bench --bench blob_sync -- --flush-ms N` runs on a simulated disk instead
//! (`benches/support/slow_disk.rs`, needs root): ext4 on a loop device whose cache flush
//! takes N ms, for a machine whose own disk flushes for free. `--threads N[,M...]` measures
//! "together" with these many fsyncs in flight (default: the writer's default).

use std::time::Instant;

use roverlog_core::format::blob::{BlobWriter, DEFAULT_SYNC_THREADS};

#[path = "support/slow_disk.rs"]
mod slow_disk;

fn run(root: &std::path::Path, threads: usize) -> f64 {
    let dir = tempfile::tempdir_in(root).unwrap();
    let sample = vec![0xABu8; 60_000];
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for cam in 0..8 {
            let (dir, sample) = (dir.path(), &sample);
            s.spawn(move || {
                let mut w = BlobWriter::create(&dir.join(format!("cam{cam}")), "jpg").unwrap();
                w.set_sync_threads(threads);
                for i in 0..300 {
                    w.append(sample).unwrap();
                    if i % 30 == 29 {
                        w.sync().unwrap();
                    }
                }
                w.finish().unwrap();
            });
        }
    });
    (8.0 * 300.0) / t0.elapsed().as_secs_f64()
}

/// What follows `name` on the command line (cargo adds `--bench`, which is ignored).
fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    Some(
        args.get(i + 1)
            .unwrap_or_else(|| panic!("{name} needs a value"))
            .clone(),
    )
}

fn number(name: &str, v: &str) -> u64 {
    v.parse()
        .unwrap_or_else(|_| panic!("{name} {v}: not a whole number"))
}

/// `--threads N[,M...]`: the "together" modes to measure (default: the writer's default).
fn threads_arg() -> Vec<usize> {
    match arg("--threads") {
        None => vec![DEFAULT_SYNC_THREADS],
        Some(v) => v
            .split(',')
            .map(|n| number("--threads", n).max(1) as usize)
            .collect(),
    }
}

fn main() {
    let slow = arg("--flush-ms").map(|v| {
        let ms = number("--flush-ms", &v);
        let work = std::env::current_dir()
            .unwrap()
            .join("target/bench-tmp/slow-disk");
        let disk = slow_disk::SlowDisk::new(&work, 4 << 30, std::time::Duration::from_millis(ms));
        println!(
            "simulated disk: ext4 on {}, cache flush {ms} ms",
            disk.device()
        );
        disk
    });
    let root = match &slow {
        Some(disk) => disk.mount.clone(),
        None => std::env::var("BLOB_BENCH_DIR")
            .map(Into::into)
            .unwrap_or_else(|_| std::env::current_dir().unwrap()),
    };
    println!(
        "8 writers x 300 files of 60 KB, a sync every 30 files, in {}",
        root.display()
    );
    let flushes = || slow.as_ref().map_or(0, |d| d.flushes());
    // Modes: one at a time, then each `--threads` count; rounds alternate between them.
    let mut modes = vec![1];
    modes.extend(threads_arg());
    let mut best = vec![0f64; modes.len()];
    let mut device_flushes = vec![0u64; modes.len()];
    const ROUNDS: u64 = 3;
    for _ in 0..ROUNDS {
        for (i, &threads) in modes.iter().enumerate() {
            let f0 = flushes();
            best[i] = best[i].max(run(&root, threads));
            device_flushes[i] += flushes() - f0;
        }
    }
    for (i, &threads) in modes.iter().enumerate() {
        let what = match threads {
            1 => "one fsync at a time".to_string(),
            n => format!("a period's files together, up to {n} at once"),
        };
        print!("  {what:<45} {:8.0} files/s", best[i]);
        if i > 0 {
            print!("  ({:.2}x)", best[i] / best[0]);
        }
        if slow.is_some() {
            print!("  {} device flushes per round", device_flushes[i] / ROUNDS);
        }
        println!();
    }
}
