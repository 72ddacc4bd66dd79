//! fsyncing a blob channel's files (`jpg`, `npz`): one at a time (what the writer did) against
//! the files of a period fsynced together, same run, on the data disk (the current
//! directory's filesystem, not /tmp).
//!
//! `cargo bench --bench blob_sync` (env `BLOB_BENCH_DIR` for another disk). Eight cameras at
//! 30 fps are eight writers, each syncing its 30 files of a one-second period: each mode writes
//! 8 x 300 files of 60 KB from 8 threads, a sync every 30 files, and reports files/s.

use std::time::Instant;

use roverlog::format::blob::BlobWriter;

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

fn main() {
    let root = std::env::var("BLOB_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(|_| std::env::current_dir().unwrap());
    println!(
        "8 writers x 300 files of 60 KB, a sync every 30 files, in {}",
        root.display()
    );
    let (mut one, mut many) = (0f64, 0f64);
    for _ in 0..3 {
        one = one.max(run(&root, 1));
        many = many.max(run(&root, roverlog::format::blob::DEFAULT_SYNC_THREADS));
    }
    println!("  one fsync at a time:       {one:8.0} files/s");
    println!(
        "  a period's files together: {many:8.0} files/s  ({:.2}x)",
        many / one
    );
}
