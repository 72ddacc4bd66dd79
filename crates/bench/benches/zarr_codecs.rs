//! The zarr readings issue 13 added, ours vs zarr-python 2 in one run: a Fortran-order 2-D
//! array (Blosc lz4) and a bz2-compressed one, whole-array reads, best of 3, page cache warm;
//! results byte-identical (sha256).
//!
//! `cargo bench --bench zarr_codecs`

// The integration tests' helpers (the venv's Python, the root): crates/testkit.
use roverlog_testkit::common;

#[path = "support/mod.rs"]
mod support;

use support::best;

use roverlog_core::zarr::ZarrArray;

const PY: &str = r#"
import hashlib, json, sys, time
import numcodecs, numpy as np, zarr
d, cmd = sys.argv[1], sys.argv[2]
if cmd == "write":
    g = zarr.open_group(d, mode="w")
    rng = np.random.default_rng(1)
    f = np.round(rng.normal(0, 50, (3000, 2000)), 2)
    g.create_dataset("forder", data=f, chunks=(500, 400), order="F", compressor=numcodecs.Blosc("lz4", 5, 1))
    g.create_dataset("corder", data=f, chunks=(500, 400), order="C", compressor=numcodecs.Blosc("lz4", 5, 1))
    i = np.cumsum(rng.integers(-4, 5, 10_000_000)).astype("<i4")
    g.create_dataset("bz2", data=i, chunks=(1_000_000,), compressor=numcodecs.BZ2(level=5))
else:
    out = {}
    for name in ["forder", "corder", "bz2"]:
        a = zarr.open_group(d, mode="r")[name]
        best = min((lambda t0: (a[...], time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(3))
        out[name] = {"s": best, "sha": hashlib.sha256(np.ascontiguousarray(a[...]).astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()}
    print(json.dumps(out))
"#;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    common::run_python(PY, &[d.as_ref(), "write".as_ref()]);
    let py: serde_json::Value =
        serde_json::from_str(common::run_python(PY, &[d.as_ref(), "time".as_ref()]).trim())
            .unwrap();
    println!("zarr codecs: ours vs zarr-python 2.18.7, whole-array reads, best of 3");
    for (name, what) in [
        (
            "forder",
            "3000 x 2000 f8, order F, Blosc lz4, chunks 500 x 400 (48 MB)",
        ),
        ("corder", "the same array in order C (the reference for F)"),
        (
            "bz2",
            "10,000,000 i4, BZ2 level 5, chunks of 1,000,000 (40 MB)",
        ),
    ] {
        let (t, bytes) = best(3, || {
            ZarrArray::open(dir.path().join(name))
                .unwrap()
                .read_all()
                .unwrap()
        });
        assert_eq!(
            common::sha256_hex(&bytes),
            py[name]["sha"].as_str().unwrap(),
            "{name}: our bytes differ from zarr-python's"
        );
        let theirs = py[name]["s"].as_f64().unwrap();
        println!(
            "  {what}: ours {:.1} ms, zarr-python {:.1} ms: {:.2}x",
            t.as_secs_f64() * 1e3,
            theirs * 1e3,
            theirs / t.as_secs_f64()
        );
    }
}
