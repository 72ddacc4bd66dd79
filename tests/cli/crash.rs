//! Crash tests: cut a small trace's channel files at every byte offset of their last records
//! (as a crash mid-write leaves them), then `roverlog validate` must flag it and
//! `roverlog recover` must leave channels that agree, whose surviving samples are
//! byte-identical to what was written. Recovery must be idempotent.

use crate::support::common;

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use roverlog_core::format::{
    self, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};

const N: usize = 6;

fn sample(k: usize, i: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| ((i * 17 + j * 5 + k * 3) % 256) as u8)
        .collect()
}

fn blob_len(i: usize) -> usize {
    20 + i * 9
}

/// Writes the reference sensor and returns the samples of each data channel.
fn write_reference(dir: &Path) -> Vec<Vec<Vec<u8>>> {
    let m = SensorMeta {
        channels: vec![
            (
                "acc".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], ""),
            ),
            (
                "rng".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![4, 4], ""),
            ),
            (
                "img".into(),
                ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![], ""),
            ),
        ],
    };
    let mut w = SensorWriter::create(dir, m, &WriterOptions::default()).unwrap();
    let mut out = vec![Vec::new(), Vec::new(), Vec::new()];
    for i in 0..N {
        let s = [
            sample(0, i, 12),
            sample(1, i, 32),
            sample(2, i, blob_len(i)),
        ];
        w.append(10.0 + i as f64, &[&s[0], &s[1], &s[2]]).unwrap();
        for (k, v) in s.into_iter().enumerate() {
            out[k].push(v);
        }
    }
    w.finish().unwrap();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Checks a damaged copy: validate flags it, recover repairs it to a consistent prefix of the
/// reference, a second recover does nothing, validate then passes.
/// `lossless`: the damage hit only redundant bytes (the lzmaf index), so recovery must keep
/// every sample; otherwise it must cost at least the damaged sample.
fn check_case(trace: &Path, written: &[Vec<Vec<u8>>], what: &str, lossless: bool) {
    let sensor = trace.join("s");
    let (code, out) = run(&["validate".as_ref(), trace.as_os_str()]);
    assert_eq!(code, 1, "{what}: validate must flag the damage:\n{out}");

    let (code, out) = run(&["recover".as_ref(), trace.as_os_str()]);
    assert_eq!(code, 0, "{what}: recover failed:\n{out}");
    assert!(
        !out.contains("nothing to recover"),
        "{what}: recover must report its cuts:\n{out}"
    );

    let (code, out2) = run(&["recover".as_ref(), trace.as_os_str()]);
    assert_eq!(code, 0, "{what}: {out2}");
    assert!(
        out2.contains("nothing to recover"),
        "{what}: recover is not idempotent:\n{out2}"
    );

    let (code, out3) = run(&["validate".as_ref(), "--deep".as_ref(), trace.as_os_str()]);
    assert_eq!(
        code, 0,
        "{what}: still invalid after recover ({out}):\n{out3}"
    );

    let s = format::Sensor::open(&sensor).unwrap();
    let n = s.len().unwrap() as usize;
    if lossless {
        assert_eq!(
            n, N,
            "{what}: index damage must lose no sample (frames are re-indexed)"
        );
    } else {
        assert!(
            n < N,
            "{what}: damage must cost at least the damaged sample"
        );
    }
    assert_eq!(
        s.timestamps().unwrap(),
        (0..n).map(|i| 10.0 + i as f64).collect::<Vec<_>>()
    );
    for (k, name) in ["acc", "rng", "img"].iter().enumerate() {
        let mut r = s.channel(name).unwrap();
        assert_eq!(
            r.len().unwrap() as usize,
            n,
            "{what}: {name} disagrees with ts"
        );
        for (i, want) in written[k].iter().take(n).enumerate() {
            assert_eq!(
                &*r.get(i as u64).unwrap(),
                want.as_slice(),
                "{what}: {name}[{i}] changed"
            );
        }
    }
}

/// Runs roverlog; (exit code, stdout and stderr).
fn run(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let r = common::roverlog(args);
    (r.code, r.text())
}

fn truncate(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn every_torn_tail_is_flagged_and_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    fs::create_dir(&reference).unwrap();
    fs::write(reference.join("config.yaml"), "{}\n").unwrap();
    let written = write_reference(&reference.join("s"));

    let index = format::lzmaf::read_index(&reference.join("s/rng_i")).unwrap();
    // (file, sizes to cut it to): every offset inside the last two records.
    let mut cases: Vec<(PathBuf, u64)> = Vec::new();
    for (file, rec) in [("ts", 8u64), ("acc", 12)] {
        let size = rec * N as u64;
        for cut in size - 2 * rec..size {
            cases.push((PathBuf::from(file), cut));
        }
    }
    let data_len = index[N];
    for cut in index[N - 2]..data_len {
        cases.push((PathBuf::from("rng"), cut));
    }
    let index_len = 8 * (N as u64 + 1);
    for cut in index_len - 16..index_len {
        cases.push((PathBuf::from("rng_i"), cut));
    }
    let last_blob = format!("img/{}", format::blob::sample_name(N as u64 - 1, "jpg"));
    cases.push((PathBuf::from(&last_blob), 0));
    assert!(cases.len() > 100, "{} cases", cases.len());

    for (n, (file, cut)) in cases.iter().enumerate() {
        let trace = tmp.path().join(format!("case{n}"));
        copy_dir(&reference, &trace);
        truncate(&trace.join("s").join(file), *cut);
        let lossless = file.as_os_str() == "rng_i";
        check_case(
            &trace,
            &written,
            &format!("{} cut to {cut}", file.display()),
            lossless,
        );
        fs::remove_dir_all(&trace).unwrap();
    }
}

#[test]
fn crash_leftovers_of_blob_and_index_are_flagged_and_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    fs::create_dir(&reference).unwrap();
    let written = write_reference(&reference.join("s"));
    // (what, lossless, damage)
    #[allow(clippy::type_complexity)]
    let damage: Vec<(&str, bool, Box<dyn Fn(&Path)>)> = vec![
        (
            "last blob file missing",
            false,
            Box::new(|s: &Path| fs::remove_file(s.join("img/000005.jpg")).unwrap()),
        ),
        (
            "partial blob left behind",
            false,
            Box::new(|s: &Path| {
                fs::remove_file(s.join("img/000005.jpg")).unwrap();
                fs::write(s.join(".img..partial"), b"half a frame").unwrap();
            }),
        ),
        (
            "a gap in blob numbering",
            false,
            Box::new(|s: &Path| fs::remove_file(s.join("img/000003.jpg")).unwrap()),
        ),
        (
            "data frame without index entry",
            true,
            Box::new(|s: &Path| {
                let idx = format::lzmaf::read_index(&s.join("rng_i")).unwrap();
                truncate(&s.join("rng_i"), 8 * (idx.len() as u64 - 1));
            }),
        ),
        (
            "index lost entirely",
            true,
            Box::new(|s: &Path| fs::remove_file(s.join("rng_i")).unwrap()),
        ),
        (
            "ts one sample short",
            false,
            Box::new(|s: &Path| truncate(&s.join("ts"), 8 * (N as u64 - 1))),
        ),
        (
            "index entry pointing past data",
            false,
            Box::new(|s: &Path| {
                let idx = format::lzmaf::read_index(&s.join("rng_i")).unwrap();
                truncate(&s.join("rng"), idx[N] - 1);
            }),
        ),
    ];
    for (n, (what, lossless, hurt)) in damage.iter().enumerate() {
        let trace = tmp.path().join(format!("case{n}"));
        copy_dir(&reference, &trace);
        hurt(&trace.join("s"));
        check_case(&trace, &written, what, *lossless);
    }
}

#[test]
fn validate_exit_codes_and_recursive_search() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let good = root.join("2026.11.22-08.00.00");
    fs::create_dir_all(&good).unwrap();
    fs::write(good.join("config.yaml"), "{}\n").unwrap();
    write_reference(&good.join("s"));
    let (code, out) = run(&["validate".as_ref(), root.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok (6 samples)"), "{out}");

    let bad = root.join("deeper/2026.11.22-09.00.00");
    fs::create_dir_all(&bad).unwrap();
    write_reference(&bad.join("s"));
    truncate(&bad.join("s/acc"), 7);
    let (code, out) = run(&["validate".as_ref(), root.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("torn tail"), "{out}");
    assert!(out.contains("different sample counts"), "{out}");

    let (code, out) = run(&["validate".as_ref(), tmp.path().join("nope").as_os_str()]);
    assert_eq!(code, 2, "{out}");
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let (code, out) = run(&["validate".as_ref(), empty.as_os_str()]);
    assert_eq!(code, 2, "an empty directory holds no trace: {out}");
    assert!(out.contains("no roverd trace found"), "{out}");

    fs::write(bad.join("s/meta.json"), "{not json").unwrap();
    let (code, out) = run(&["validate".as_ref(), bad.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("meta.json: invalid JSON"), "{out}");
}

#[test]
fn whole_file_lzma_channel_is_counted_and_cut_by_re_encoding() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    fs::create_dir(&dir).unwrap();
    let m = SensorMeta {
        channels: vec![
            ("ts".into(), ChannelMeta::timestamps()),
            (
                "h".into(),
                ChannelMeta::new(ChannelFormat::Lzma, DType::U4, vec![2], ""),
            ),
        ],
    };
    m.write_atomic(&dir).unwrap();
    let samples: Vec<Vec<u8>> = (0..5).map(|i| sample(0, i, 8)).collect();
    fs::write(dir.join("h"), format::lzma::compress(&samples.concat(), 0)).unwrap();
    let ts: Vec<u8> = (0..4).flat_map(|i| (i as f64).to_le_bytes()).collect();
    fs::write(dir.join("ts"), ts).unwrap();

    let (code, out) = run(&["validate".as_ref(), dir.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ts 4, h 5"), "{out}");
    let (code, out) = run(&["recover".as_ref(), dir.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("re-encoded with its first 4 of 5"), "{out}");
    let s = format::Sensor::open(&dir).unwrap();
    let mut r = s.channel("h").unwrap();
    assert_eq!(r.get_range(0..4).unwrap(), samples[..4]);
    assert_eq!(r.len().unwrap(), 4);
    let (code, out) = run(&["validate".as_ref(), "--deep".as_ref(), dir.as_os_str()]);
    assert_eq!(code, 0, "{out}");
}
