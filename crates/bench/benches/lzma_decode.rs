//! Which `.xz` decoder reads `lzmaf` frames faster per core: `lzma-rust2` (the format
//! library's codec) against liblzma (xz-utils' C library, built static from its vendored
//! source by the `liblzma` crate), on the rig's realistic 128 x 2048 lidar frames
//! (`roverlog_bench::lidar`), each channel image compressed on its own at preset 0 as the
//! collector stores it. Both decode the same bytes, into a reused buffer, one thread; the
//! rate is decompressed bytes over that thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, so
//! other work on a shared machine does not count). Rounds alternate between the decoders.
//!
//! Run: `cargo bench -p roverlog-bench --bench lzma_decode`.

use std::io::{Read, Write};

use roverlog_bench::lidar::{lidar_frame, RIG_SHAPE};

/// This thread's CPU time, seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

const FRAMES: u64 = 24;
const ROUNDS: usize = 5;

fn rust2(frame: &[u8], out: &mut Vec<u8>) {
    out.clear();
    lzma_rust2::XzReader::new(frame, true)
        .read_to_end(out)
        .unwrap();
}

fn liblzma_stream(frame: &[u8], out: &mut Vec<u8>, cap: usize) {
    out.clear();
    out.reserve(cap);
    let mut s = liblzma::stream::Stream::new_stream_decoder(u64::MAX, 0).unwrap();
    let st = s
        .process_vec(frame, out, liblzma::stream::Action::Finish)
        .unwrap();
    assert_eq!(st, liblzma::stream::Status::StreamEnd);
}

fn main() {
    let (rows, cols) = RIG_SHAPE;
    let mut jobs: Vec<(&'static str, Vec<u8>, usize)> = Vec::new();
    for i in 0..FRAMES {
        let f = lidar_frame(rows, cols, i);
        for (name, _dtype, bytes) in f.channels() {
            let mut w =
                lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(0))
                    .unwrap();
            w.write_all(bytes).unwrap();
            jobs.push((name, w.finish().unwrap(), bytes.len()));
        }
    }
    println!(
        "lzma_decode: {FRAMES} frames of {rows} x {cols}, best of {ROUNDS} rounds (thread CPU)"
    );
    for channel in ["rng", "rfl", "nir"] {
        let js: Vec<&(&str, Vec<u8>, usize)> = jobs.iter().filter(|j| j.0 == channel).collect();
        let raw: usize = js.iter().map(|j| j.2).sum();
        let packed: usize = js.iter().map(|j| j.1.len()).sum();
        let (mut a, mut b) = (f64::MAX, f64::MAX);
        let mut out = Vec::new();
        for _ in 0..ROUNDS {
            let c = thread_cpu();
            for j in &js {
                rust2(&j.1, &mut out);
                assert_eq!(out.len(), j.2);
            }
            a = a.min(thread_cpu() - c);
            let c = thread_cpu();
            for j in &js {
                liblzma_stream(&j.1, &mut out, j.2);
                assert_eq!(out.len(), j.2);
            }
            b = b.min(thread_cpu() - c);
        }
        let n = js.len() as f64;
        println!(
            "{channel}: ratio {:.2}; lzma-rust2 {:.2} ms/frame ({:.0} MB/s), liblzma {:.2} ms/frame ({:.0} MB/s); lzma-rust2 / liblzma {:.2}x",
            raw as f64 / packed as f64,
            a / n * 1e3,
            raw as f64 / a / 1e6,
            b / n * 1e3,
            raw as f64 / b / 1e6,
            a / b
        );
    }
}
