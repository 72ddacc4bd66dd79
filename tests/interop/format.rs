//! Interop with the upstream tools: traces written with numpy and Python's `lzma` the way
//! upstream does read identically here, and ours read identically with `numpy.fromfile`,
//! `numpy.memmap` and `lzma`. The peer is `tests/py/roverd_peer.py`; Python comes from the
//! project's venv (`scripts/py-env.sh`), never skipped.

use crate::support::common;

use std::ffi::OsStr;

use roverlog_core::format::{
    self, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};

const N: usize = 9;

/// (name, format, type, shape), as in the peer script.
fn channels() -> Vec<(&'static str, &'static str, &'static str, Vec<usize>)> {
    vec![
        ("acc", "raw", "f4", vec![3]),
        ("rot", "raw", "f8", vec![3, 3]),
        ("temp", "raw", "i2", vec![]),
        ("iq", "raw", "c8", vec![2, 2]),
        ("rng", "lzmaf", "u2", vec![8, 16]),
        ("nir", "lzmaf", "u1", vec![8, 16]),
        ("hist", "lzma", "u4", vec![5]),
        ("img", "jpg", "u1", vec![]),
    ]
}

fn pattern(k: usize, i: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|j| ((i * 31 + j * 7 + k * 13) % 251) as u8)
        .collect()
}

fn blob_len(i: usize) -> usize {
    10 + (i * 37) % 300
}

fn peer(cmd: &str, dir: &std::path::Path) -> String {
    let script = std::fs::read_to_string(common::root().join("tests/py/roverd_peer.py")).unwrap();
    common::run_python(&script, &[OsStr::new(cmd), dir.as_os_str()])
}

#[test]
fn upstream_written_trace_reads_identically() {
    let tmp = tempfile::tempdir().unwrap();
    peer("write", tmp.path());
    let trace = format::Trace::open(tmp.path()).unwrap();
    assert_eq!(trace.sensor_names(), ["sensor"]);
    let s = trace.sensor("sensor").unwrap();
    assert_eq!(s.len().unwrap(), N as u64);
    let ts = s.timestamps().unwrap();
    for (i, t) in ts.iter().enumerate() {
        assert_eq!(*t, 1700000000.0 + i as f64 * 0.05);
    }
    for (k, (name, fmt, typ, shape)) in channels().into_iter().enumerate() {
        let meta = s.meta().get(name).unwrap();
        assert_eq!(meta.format.as_str(), fmt);
        assert_eq!(meta.dtype.code(), typ);
        assert_eq!(meta.shape, shape);
        assert_eq!(meta.desc, name);
        let mut r = s.channel(name).unwrap();
        assert_eq!(r.len().unwrap(), N as u64, "{name}");
        for i in 0..N {
            let n = if fmt == "jpg" {
                blob_len(i)
            } else {
                meta.sample_bytes()
            };
            assert_eq!(
                &*r.get(i as u64).unwrap(),
                pattern(k, i, n).as_slice(),
                "{name}[{i}]"
            );
        }
    }
    let check = format::check_sensor(&tmp.path().join("sensor"), format::Depth::Deep).unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
}

#[test]
fn our_trace_reads_identically_with_numpy_and_lzma() {
    let tmp = tempfile::tempdir().unwrap();
    let writable: Vec<_> = channels()
        .into_iter()
        .enumerate()
        .filter(|(_, c)| c.1 != "lzma")
        .collect();
    let meta = SensorMeta {
        channels: writable
            .iter()
            .map(|(_, (name, fmt, typ, shape))| {
                (
                    name.to_string(),
                    ChannelMeta::new(
                        ChannelFormat::parse(fmt),
                        DType::parse(typ).unwrap(),
                        shape.clone(),
                        name,
                    ),
                )
            })
            .collect(),
    };
    let mut w = SensorWriter::create(
        &tmp.path().join("sensor"),
        meta.clone(),
        &WriterOptions::default(),
    )
    .unwrap();
    for i in 0..N {
        let samples: Vec<Vec<u8>> = writable
            .iter()
            .map(|(k, (name, fmt, _, _))| {
                let n = if *fmt == "jpg" {
                    blob_len(i)
                } else {
                    meta.get(name).unwrap().sample_bytes()
                };
                pattern(*k, i, n)
            })
            .collect();
        let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
        w.append(1700000000.0 + i as f64 * 0.05, &refs).unwrap();
    }
    w.finish().unwrap();
    let out = peer("check", tmp.path());
    assert!(
        out.contains(&format!(
            "checked {} channels of {N} samples",
            writable.len()
        )),
        "{out}"
    );
}
