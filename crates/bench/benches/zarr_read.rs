//! Our zarr reader vs zarr-python 2 on an L5Kit-like `agents` array, in one run.
//!
//! `cargo bench --bench zarr_read` (env `ZARR_BENCH_ROWS`, default 1,000,000). zarr-python
//! writes the array (L5Kit agents dtype, Blosc lz4 clevel 5 byte shuffle, chunks of 10000)
//! into a temp dir; then both readers time a whole-array read and 1000 random slices of 100
//! rows (the same slices), best of several repeats in
//! alternating rounds. Results must be byte-identical.

// The integration tests' helpers (the venv's Python, the root): crates/testkit.
use roverlog_testkit::common;

#[path = "support/mod.rs"]
mod support;

use support::best;

use std::time::{Duration, Instant};

use roverlog_core::zarr::ZarrArray;

fn main() {
    let rows: u64 = std::env::var("ZARR_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let repeats = 5;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let script = common::root().join("scripts/zarr_bench.py");
    let script = script.to_str().unwrap();
    let t = Instant::now();
    common::run_python(
        &format!("import runpy, sys; sys.argv = ['zarr_bench.py', 'write', {d:?}, '{rows}']; runpy.run_path({script:?}, run_name='__main__')"),
        &[],
    );
    eprintln!(
        "wrote {rows} agents with zarr-python in {:.1?}",
        t.elapsed()
    );

    let starts: Vec<u64> = std::fs::read_to_string(dir.path().join("starts.txt"))
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();

    // Byte-identical to zarr-python (sha256 of the whole array).
    let bytes = ZarrArray::open(dir.path().join("agents"))
        .unwrap()
        .read_all()
        .unwrap();
    assert_eq!(bytes.len() as u64, rows * 116);
    let py_sha = common::run_python(
        &format!(
            "import zarr, hashlib; print(hashlib.sha256(zarr.open({:?}, mode='r')[:].tobytes()).hexdigest())",
            format!("{d}/agents")
        ),
        &[],
    );
    use sha2::Digest;
    let ours: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(ours, py_sha.trim(), "our bytes differ from zarr-python's");
    drop(bytes);

    let read_slices = |a: &ZarrArray| {
        starts
            .iter()
            .map(|&s| a.read_rows(s..s + 100).unwrap().len())
            .sum::<usize>()
    };
    // The machine is shared: alternate rounds of zarr-python and ours so that both see the
    // same load, and keep the best of each.
    let rounds = 3;
    let (mut whole, mut slices, mut slices_nocache) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut py_whole, mut py_slices) = (f64::MAX, f64::MAX);
    let mut py_threads = serde_json::Value::Null;
    for _ in 0..rounds {
        let py = common::run_python(
            &format!("import runpy, sys; sys.argv = ['zarr_bench.py', 'time', {d:?}, '{repeats}']; runpy.run_path({script:?}, run_name='__main__')"),
            &[],
        );
        let py: serde_json::Value = serde_json::from_str(py.trim()).unwrap();
        py_whole = py_whole.min(py["whole_s"].as_f64().unwrap());
        py_slices = py_slices.min(py["slices_s"].as_f64().unwrap());
        py_threads = py["nthreads"].clone();

        // A fresh handle each time: no decoded chunk survives between repeats.
        let open = || ZarrArray::open(dir.path().join("agents")).unwrap();
        whole = whole.min(best(repeats, || open().read_all().unwrap().len()).0);
        let (t, n) = best(repeats.div_ceil(2), || read_slices(&open()));
        assert_eq!(n, starts.len() * 100 * 116);
        slices = slices.min(t);
        // Without the decoded-chunk cache every slice decodes its chunk(s) again, like
        // zarr-python does.
        let t = best(repeats.div_ceil(2), || {
            let a = open();
            a.set_cache_bytes(0);
            read_slices(&a)
        })
        .0;
        slices_nocache = slices_nocache.min(t);
    }
    let py = serde_json::json!({"nthreads": py_threads});
    let mb = (rows * 116) as f64 / 1e6;
    println!("zarr read benchmark: {rows} L5Kit agents rows ({mb:.0} MB), Blosc lz4/5 byte shuffle, chunks 10000");
    println!(
        "threads: ours {}, c-blosc in zarr-python {}",
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8),
        py["nthreads"]
    );
    println!(
        "{:<38} {:>12} {:>12} {:>8}",
        "read", "ours", "zarr-python", "ratio"
    );
    let line = |name: &str, ours: Duration, py: f64| {
        println!(
            "{name:<38} {:>10.1}ms {:>10.1}ms {:>7.2}x",
            ours.as_secs_f64() * 1e3,
            py * 1e3,
            py / ours.as_secs_f64()
        );
    };
    line("whole array", whole, py_whole);
    line("1000 random slices x 100 rows", slices, py_slices);
    line("  same, decoded-chunk cache off", slices_nocache, py_slices);
    println!(
        "whole array throughput: ours {:.0} MB/s, zarr-python {:.0} MB/s",
        mb / whole.as_secs_f64(),
        mb / py_whole
    );
}
