//! Our timestamp models against upstream's definitions written with numpy
//! (`tests/py/timestamps_ref.py`), bit for bit, on jittered camera-like and lidar-like
//! timestamps with dropped frames, several block sizes; and `cat --timestamps`.

use crate::support::common;

use common::{roverlog, run_python};
use roverlog_core::timestamps::{discretize, smooth};

/// `n` timestamps at `hz` from `t0` with receive jitter up to `jitter` s and every `drop`-th
/// frame missing (deterministic).
fn jittered(n: usize, hz: f64, jitter: f64, drop: usize) -> Vec<f64> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = Vec::new();
    let mut k = 0usize;
    while out.len() < n {
        k += 1;
        if drop > 0 && k.is_multiple_of(drop) {
            continue;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        out.push(1.7e9 + k as f64 / hz + jitter * u);
    }
    out
}

fn reference(x: &[f64], smooth_s: f64, disc_s: f64, eps: f64) -> (Vec<f64>, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ts.f8");
    std::fs::write(
        &f,
        x.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<u8>>(),
    )
    .unwrap();
    let script =
        std::fs::read_to_string(common::root().join("tests/py/timestamps_ref.py")).unwrap();
    let (a, b, c) = (smooth_s.to_string(), disc_s.to_string(), eps.to_string());
    run_python(
        &script,
        &[f.as_os_str(), a.as_ref(), b.as_ref(), c.as_ref()],
    );
    let get = |k: &str| -> Vec<f64> {
        let bytes = std::fs::read(dir.path().join(format!("ts.f8.{k}"))).unwrap();
        bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    (get("smooth"), get("discretize"))
}

#[test]
fn smooth_and_discretize_equal_upstreams_definitions_bit_for_bit() {
    let cases = [
        (jittered(900, 30.0, 0.004, 0), 30.0, 10.0), // camera, 30 s: one block
        (jittered(3000, 30.0, 0.004, 0), 7.5, 2.0),  // several blocks, a short last one
        (jittered(1000, 10.0, 0.002, 17), 30.0, 10.0), // lidar with dropped frames
        (jittered(1000, 10.0, 0.002, 5), 3.3, 1.1),
        (jittered(5, 100.0, 0.0, 0), 30.0, 10.0),
    ];
    for (x, s, d) in &cases {
        let (want_s, want_d) = reference(x, *s, *d, 0.05);
        let got_s = smooth(x, *s).unwrap();
        let got_d = discretize(x, *d, 0.05).unwrap();
        assert_eq!(got_s.len(), x.len());
        for (i, (a, b)) in got_s.iter().zip(&want_s).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "smooth: sample {i} of {}: {a} vs {b}",
                x.len()
            );
        }
        for (i, (a, b)) in got_d.iter().zip(&want_d).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "discretize: sample {i} of {}: {a} vs {b}",
                x.len()
            );
        }
        assert_eq!((got_s.len(), got_d.len()), (want_s.len(), want_d.len()));
    }
}

#[test]
fn cat_and_replay_sources_give_modelled_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("trace");
    std::fs::create_dir_all(t.join("cam")).unwrap();
    std::fs::write(t.join("config.yaml"), "cam: {}\n").unwrap();
    std::fs::write(
        t.join("cam/meta.json"),
        r#"{"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"},
            "x": {"format": "raw", "type": "u1", "shape": [2], "desc": ""}}"#,
    )
    .unwrap();
    let x = jittered(600, 30.0, 0.004, 0);
    let bytes: Vec<u8> = x.iter().flat_map(|t| t.to_le_bytes()).collect();
    std::fs::write(t.join("cam/ts"), &bytes).unwrap();
    std::fs::write(t.join("cam/x"), vec![7u8; 2 * x.len()]).unwrap();
    let f64s = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let cat = |extra: &[&str]| {
        let mut a = vec!["cat".to_string(), t.display().to_string()];
        a.extend(extra.iter().map(|s| s.to_string()));
        roverlog(&a)
    };
    let r = cat(&["cam/ts", "--timestamps", "smooth"]);
    assert!(r.ok(), "{}", r.text());
    assert_eq!(f64s(&r.stdout), smooth(&x, 30.0).unwrap());
    let r = cat(&["cam/ts", "--timestamps", "discretize", "--rows", "10:20"]);
    assert!(r.ok(), "{}", r.text());
    assert_eq!(f64s(&r.stdout), discretize(&x, 10.0, 0.05).unwrap()[10..20]);
    let r = cat(&["cam/ts"]);
    assert_eq!(r.stdout, bytes, "raw is the default");
    for (args, want) in [
        (
            &["cam/x", "--timestamps", "smooth"][..],
            "applies to the `ts` channel",
        ),
        (
            &["cam/ts", "--timestamps", "wobbly"][..],
            "unknown timestamp model",
        ),
    ] {
        let r = cat(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.text());
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
    // The replay/import source gives the same model to every sensor.
    use roverlog_core::replay::{Source, TraceSource};
    let mut src = TraceSource::open(&t, &[])
        .unwrap()
        .with_timestamps("smooth".parse().unwrap());
    assert_eq!(src.timestamps(0).unwrap(), smooth(&x, 30.0).unwrap());
    let out = dir.path().join("imported");
    let r = roverlog(&[
        "import".as_ref(),
        t.as_os_str(),
        out.as_os_str(),
        "--timestamps".as_ref(),
        "discretize".as_ref(),
    ]);
    assert!(r.ok(), "{}", r.text());
    let got = f64s(&std::fs::read(out.join("cam/ts")).unwrap());
    assert_eq!(got, discretize(&x, 10.0, 0.05).unwrap());
}
