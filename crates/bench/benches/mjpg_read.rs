//! Reading a 1080p MJPEG AVI (an upstream camera `video.avi`): ours against OpenCV's
//! `VideoCapture`, same run.
//!
//! `cargo bench --bench mjpg_read` writes the file with OpenCV's `VideoWriter` (default 150
//! frames of 1920x1080; `MJPG_BENCH_FRAMES`, `MJPG_BENCH_WIDTH`, `MJPG_BENCH_HEIGHT` override),
//! then, page cache warm, best of `REPEATS`:
//! - frame bytes by index: open the file and copy every frame's JPEG bytes into a reused
//!   buffer, against the ceiling of the same copies from an in-memory buffer (a memcpy);
//! - decoded frames per second: ours (zune-jpeg to RGB) on 1 thread and on one thread per CPU
//!   (frames split in contiguous ranges), against OpenCV opening the file and reading every
//!   frame (`VideoCapture.read` plus upstream's BGR -> RGB conversion).

// The integration tests' helpers (the venv's Python, the root): crates/testkit.
use roverlog_testkit::common;

#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;

use roverlog_core::format::avi::{decode_rgb, MjpgReader};
use support::best;

const REPEATS: usize = 3;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn decode_range(r: &MjpgReader, range: std::ops::Range<u64>) -> usize {
    range
        .map(|i| decode_rgb(r.frame(i).unwrap()).unwrap().len())
        .sum()
}

fn main() {
    let n = env_or("MJPG_BENCH_FRAMES", 150);
    let (w, h) = (
        env_or("MJPG_BENCH_WIDTH", 1920),
        env_or("MJPG_BENCH_HEIGHT", 1080),
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("video.avi");
    common::video::opencv_write(&path, w as u32, h as u32, n);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "{n} frames of {w}x{h} written by OpenCV's VideoWriter: {:.1} MB ({:.0} KB per frame)",
        size as f64 / 1e6,
        size as f64 / n as f64 / 1e3
    );

    // Frame bytes by index.
    let (open_copy, copied) = best(REPEATS, || {
        let r = MjpgReader::open(&path).unwrap();
        let mut buf = Vec::new();
        let mut total = 0;
        for i in 0..r.len() {
            buf.clear();
            buf.extend_from_slice(r.frame(i).unwrap());
            total += black_box(&buf).len();
        }
        total
    });
    let r = MjpgReader::open(&path).unwrap();
    let owned: Vec<Vec<u8>> = r.frames().map(<[u8]>::to_vec).collect();
    let (memcpy, _) = best(REPEATS, || {
        let mut buf = Vec::new();
        let mut total = 0;
        for f in &owned {
            buf.clear();
            buf.extend_from_slice(f);
            total += black_box(&buf).len();
        }
        total
    });
    let mbs = |d: std::time::Duration| copied as f64 / d.as_secs_f64() / 1e6;
    println!("frame bytes by index (copy into a reused buffer):");
    println!(
        "  ours, open + every frame:      {:8.2} ms  {:7.0} MB/s",
        open_copy.as_secs_f64() * 1e3,
        mbs(open_copy)
    );
    println!(
        "  memcpy from memory (ceiling): {:8.2} ms  {:7.0} MB/s   ours / memcpy time: {:.2}x",
        memcpy.as_secs_f64() * 1e3,
        mbs(memcpy),
        open_copy.as_secs_f64() / memcpy.as_secs_f64()
    );

    // Decoding.
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let (one, px) = best(REPEATS, || {
        let r = MjpgReader::open(&path).unwrap();
        decode_range(&r, 0..r.len())
    });
    assert_eq!(px, n * w * h * 3, "every frame decodes to HxWx3");
    let (many, _) = best(REPEATS, || {
        let r = MjpgReader::open(&path).unwrap();
        let len = r.len();
        let per = len.div_ceil(threads as u64);
        std::thread::scope(|s| {
            let r = &r;
            let hs: Vec<_> = (0..threads as u64)
                .map(|t| {
                    s.spawn(move || decode_range(r, (t * per).min(len)..((t + 1) * per).min(len)))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        })
    });
    let script = common::video::peer();
    let out = common::run_python(
        &script,
        &[
            "bench".as_ref(),
            path.as_os_str(),
            REPEATS.to_string().as_ref(),
        ],
    );
    let cv: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        cv["frames"].as_u64(),
        Some(n as u64),
        "OpenCV reads every frame"
    );
    let cv_s = cv["seconds"].as_f64().unwrap();
    let fps = |s: f64| n as f64 / s;
    println!("decoded frames per second (open + decode every frame to RGB):");
    println!(
        "  ours, 1 thread:          {:7.1} fps",
        fps(one.as_secs_f64())
    );
    println!(
        "  ours, {threads} threads:         {:7.1} fps",
        fps(many.as_secs_f64())
    );
    println!(
        "  OpenCV VideoCapture:     {:7.1} fps  (cv2 threads: {})",
        fps(cv_s),
        cv["threads"]
    );
    println!(
        "  ours / OpenCV: {:.2}x on 1 thread, {:.2}x on {threads}",
        cv_s / one.as_secs_f64(),
        cv_s / many.as_secs_f64()
    );
}
