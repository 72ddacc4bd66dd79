//! Raw-frame read throughput of our GulpIO2 reader against gulpio2 itself.
//!
//! `cargo bench --bench gulp_read` creates a gulp directory with gulpio2 (default 200 videos
//! x 30 frames of 640x480 JPEG in 4 chunks; `GULP_BENCH_VIDEOS` / `GULP_BENCH_FRAMES`
//! override, and `GULP_BENCH_WIDTH` / `GULP_BENCH_HEIGHT` the frame size), then reads every frame's raw JPEG bytes with both readers, page cache warm,
//! best of `REPEATS` runs each. gulpio2 is given an identity `jpeg_decoder`, so neither side
//! decodes. Ours copies each frame into a reused buffer (touching every byte, as gulpio2's
//! `read` does); the zero-copy figure (slices only) is printed too. `GulpDirectory::read_all`
//! (one `pread` per video into a reused buffer, chunk files on parallel threads) is timed
//! with 1 thread and with one per CPU; each frame is summed over a few bytes in the callback.
//!
//! The ceiling, same run: the same bytes copied frame by frame into a reused buffer from an
//! ordinary in-memory buffer (no file, no syscall, no page fault), i.e. what any reader that
//! hands out a copy of every frame must at least spend here; and how many times gulpio2's time
//! that is.

// The integration tests' helpers (the venv's Python, the root): crates/testkit.
use roverlog_testkit::common;

#[path = "support/mod.rs"]
mod support;

use support::best;

use std::hint::black_box;

use roverlog_core::gulp::GulpDirectory;
use serde_json::Value;

const REPEATS: usize = 5;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn py(args: &[&str]) -> Value {
    let script = std::fs::read_to_string(common::root().join("tests/py/gulp_bench.py")).unwrap();
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    serde_json::from_str(&common::run_python(&script, &args)).unwrap()
}

fn main() {
    let videos = env_or("GULP_BENCH_VIDEOS", 200);
    let frames = env_or("GULP_BENCH_FRAMES", 30);
    let (width, height) = (
        env_or("GULP_BENCH_WIDTH", 640),
        env_or("GULP_BENCH_HEIGHT", 480),
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gulp");
    std::fs::create_dir(&dir).unwrap();
    let dir_s = dir.to_str().unwrap();

    let created = py(&[
        "create",
        dir_s,
        &videos.to_string(),
        &frames.to_string(),
        "4",
        &width.to_string(),
        &height.to_string(),
    ]);
    println!(
        "created {videos} videos x {frames} frames ({width}x{height} JPEG), {:.0} MB, with gulpio2 in {:.1} s",
        created["bytes"].as_f64().unwrap() / 1e6,
        created["seconds"].as_f64().unwrap()
    );

    let (open, gd) = best(REPEATS, || GulpDirectory::open(&dir).unwrap());
    // A fresh open per run, so the map's page faults are paid every time (gulpio2 pays
    // read syscalls every time).
    let (copy, (n, bytes)) = best(REPEATS, || {
        let gd = GulpDirectory::open(&dir).unwrap();
        let mut buf = Vec::new();
        let (mut n, mut bytes) = (0usize, 0usize);
        for v in gd.videos() {
            for f in v.frames() {
                buf.clear();
                buf.extend_from_slice(f);
                black_box(&buf);
                n += 1;
                bytes += buf.len();
            }
        }
        (n, bytes)
    });
    let (copy_mapped, _) = best(REPEATS, || {
        let mut buf = Vec::new();
        for v in gd.videos() {
            for f in v.frames() {
                buf.clear();
                buf.extend_from_slice(f);
                black_box(&buf);
            }
        }
    });
    // The bulk path: open, then read_all. The bytes land in our buffer by the pread copy.
    let read_all = |threads: usize| {
        best(REPEATS, || {
            let gd = GulpDirectory::open(&dir).unwrap();
            let (frames, total) = (
                std::sync::atomic::AtomicUsize::new(0),
                std::sync::atomic::AtomicUsize::new(0),
            );
            gd.read_all(threads, |_, _, f| {
                frames.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                total.fetch_add(black_box(f).len(), std::sync::atomic::Ordering::Relaxed);
            })
            .unwrap();
            (frames.into_inner(), total.into_inner())
        })
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (all_1, counted) = read_all(1);
    assert_eq!(counted, (n, bytes));
    let (all_n, counted) = read_all(cpus);
    assert_eq!(counted, (n, bytes));
    let (zero_copy, _) = best(REPEATS, || {
        let mut bytes = 0usize;
        for v in gd.videos() {
            for f in v.frames() {
                bytes += black_box(f).len();
            }
        }
        bytes
    });

    // The memcpy ceiling: every frame's bytes, at the same sizes, from resident memory.
    let sizes: Vec<usize> = gd
        .videos()
        .flat_map(|v| v.frames().map(|f| f.len()).collect::<Vec<_>>())
        .collect();
    let src: Vec<u8> = (0..bytes).map(|i| (i * 131 + 7) as u8).collect();
    // `threads` threads, each copying a contiguous share of the frames.
    let memcpy = |threads: usize| {
        let per = sizes.len().div_ceil(threads);
        best(REPEATS, || {
            std::thread::scope(|s| {
                let mut at = 0;
                for part in sizes.chunks(per) {
                    let len: usize = part.iter().sum();
                    let src = &src[at..at + len];
                    at += len;
                    s.spawn(move || {
                        let (mut buf, mut off) = (Vec::new(), 0);
                        for &n in part {
                            buf.clear();
                            buf.extend_from_slice(&src[off..off + n]);
                            black_box(&buf);
                            off += n;
                        }
                    });
                }
            })
        })
        .0
    };
    let (memcpy_1, memcpy_n) = (memcpy(1), memcpy(cpus));

    let theirs = py(&["read", dir_s, &REPEATS.to_string()]);
    assert_eq!(theirs["frames"].as_u64().unwrap() as usize, n);
    assert_eq!(theirs["bytes"].as_u64().unwrap() as usize, bytes);
    let secs = |k: &str| theirs[k].as_f64().unwrap();
    let py_read = secs("iter_all").min(secs("getitem"));

    let mb = bytes as f64 / 1e6;
    let rate = |s: f64| {
        format!(
            "{:>10.3} ms {:>8.0} MB/s {:>12.0} frames/s",
            s * 1e3,
            mb / s,
            n as f64 / s
        )
    };
    println!("{n} frames, {mb:.0} MB of JPEG, best of {REPEATS}, page cache warm");
    println!(
        "open (parse .gmeta)        ours    {}",
        rate(open.as_secs_f64())
    );
    println!("open (parse .gmeta)        gulpio2 {}", rate(secs("open")));
    println!(
        "open + read, copy          ours    {}",
        rate(copy.as_secs_f64())
    );
    println!(
        "read, copy, map faulted in ours    {}",
        rate(copy_mapped.as_secs_f64())
    );
    println!(
        "open + read_all, 1 thread  ours    {}",
        rate(all_1.as_secs_f64())
    );
    println!(
        "open + read_all, {cpus} threads ours    {}",
        rate(all_n.as_secs_f64())
    );
    println!(
        "read, zero-copy slices     ours    {}",
        rate(zero_copy.as_secs_f64())
    );
    println!(
        "memcpy per frame from RAM, 1 thread   {}",
        rate(memcpy_1.as_secs_f64())
    );
    println!(
        "memcpy per frame from RAM, {cpus} threads  {}",
        rate(memcpy_n.as_secs_f64())
    );
    println!(
        "read via gd[id]            gulpio2 {}",
        rate(secs("getitem"))
    );
    println!(
        "read via iter_all          gulpio2 {}",
        rate(secs("iter_all"))
    );
    println!(
        "ratio, open + read all frames (gulpio2 open + best read path) / (ours, copy): {:.1}x",
        (py_read + secs("open")) / copy.as_secs_f64()
    );
    println!(
        "ratio, steady state (directory kept open): gulpio2 best read / ours copy: {:.1}x",
        py_read / copy_mapped.as_secs_f64()
    );
    println!(
        "ratio, open + read all frames, bulk path: gulpio2 / ours read_all 1 thread: {:.1}x, {cpus} threads: {:.1}x",
        (py_read + secs("open")) / all_1.as_secs_f64(),
        (py_read + secs("open")) / all_n.as_secs_f64()
    );
    println!(
        "ceiling: gulpio2 open + best read / memcpy per frame from RAM: 1 thread {:.1}x, {cpus} threads {:.1}x (a reader that copies every frame once cannot beat these with as many threads)",
        (py_read + secs("open")) / memcpy_1.as_secs_f64(),
        (py_read + secs("open")) / memcpy_n.as_secs_f64()
    );
}
