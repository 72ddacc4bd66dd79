//! The GulpIO2 reader against directories written by gulpio2 itself (`tests/py/gulp_write.py`,
//! run with the project venv), byte for byte, and its errors on broken copies of them.

use crate::support::common;

use std::fs;
use std::path::{Path, PathBuf};

use roverlog_core::gulp::{
    sanity_check, FrameSelection, GulpDirectory, GulpOptions, SanityProblem,
};
use roverlog_core::Error;
use serde_json::Value;

/// A fresh gulpio2-written directory in a temp dir, and what gulpio2 reads from it.
fn written_by_gulpio2() -> (tempfile::TempDir, PathBuf, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gulp");
    fs::create_dir(&dir).unwrap();
    let expected = tmp.path().join("expected.json");
    let script = fs::read_to_string(common::root().join("tests/py/gulp_write.py")).unwrap();
    common::run_python(&script, &[dir.as_os_str(), expected.as_os_str()]);
    let expected = serde_json::from_str(&fs::read_to_string(expected).unwrap()).unwrap();
    (tmp, dir, expected)
}

fn sha(b: &[u8]) -> String {
    common::sha256_hex(b)
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn reads_what_gulpio2_reads() {
    let (_tmp, path, expected) = written_by_gulpio2();
    let dir = GulpDirectory::open(&path).unwrap();
    assert_eq!(dir.ids().collect::<Vec<_>>(), strs(&expected["ids"]));
    assert_eq!(dir.chunks().len(), 3);
    let mut pads = [false; 4];
    for v in dir.videos() {
        let want = &expected["videos"][v.id()];
        assert_eq!(v.chunk(), want["chunk"].as_u64().unwrap());
        assert_eq!(v.meta().unwrap(), &want["meta"]);
        let frames: Vec<&[u8]> = v.frames().collect();
        let want_frames = want["frames"].as_array().unwrap();
        assert_eq!(frames.len(), want_frames.len(), "{}", v.id());
        for (got, w) in frames.iter().zip(want_frames) {
            assert_eq!(got.len() as u64, w["len"].as_u64().unwrap(), "{}", v.id());
            assert_eq!(sha(got), w["sha256"].as_str().unwrap(), "{}", v.id());
        }
        for f in v.frame_infos() {
            pads[f.pad as usize] = true;
        }
        let sliced: Vec<String> = dir
            .frames(v.id(), &"1:5:2".parse().unwrap())
            .unwrap()
            .iter()
            .map(|f| sha(f))
            .collect();
        assert_eq!(sliced, strs(&want["slice_1_5_2"]), "{}", v.id());
        let n = v.frame_count() as i64;
        let listed: Vec<String> = dir
            .frames(v.id(), &FrameSelection::Indices(vec![n - 1, 0]))
            .unwrap()
            .iter()
            .map(|f| sha(f))
            .collect();
        assert_eq!(listed, strs(&want["list_last_first"]), "{}", v.id());

        #[cfg(feature = "jpeg")]
        {
            let meta = v.meta().unwrap();
            let shape: Vec<u64> = meta["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            let img = roverlog_core::gulp::decode_jpeg(frames[0]).unwrap();
            assert_eq!(
                [img.height as u64, img.width as u64],
                shape[..],
                "{}",
                v.id()
            );
            let channels = if meta["gray"].as_bool().unwrap() {
                1
            } else {
                3
            };
            assert_eq!(img.channels, channels, "{}", v.id());
        }
    }
    assert_eq!(
        pads, [true; 4],
        "the script should produce every padding 0..3"
    );
    let report = sanity_check(&path, &GulpOptions::default()).unwrap();
    assert!(report.is_ok(), "{report}");
}

/// Copies the directory so that each error test breaks its own copy.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn open_err(path: &Path) -> (Error, String) {
    let e = GulpDirectory::open(path).unwrap_err();
    let msg = e.to_string();
    (e, msg)
}

fn gulpio2_sanity(path: &Path) -> Value {
    let script = fs::read_to_string(common::root().join("tests/py/gulp_sanity.py")).unwrap();
    serde_json::from_str(&common::run_python(&script, &[path.as_os_str()])).unwrap()
}

fn set_meta(path: &Path, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let mut v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    f(v.as_object_mut().unwrap());
    fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn broken_directories_give_clear_errors() {
    let (tmp, good, _) = written_by_gulpio2();
    let case = |name: &str| {
        let p = tmp.path().join(name);
        copy_dir(&good, &p);
        p
    };

    // Duplicate id across chunks: chunk 0 copied as chunk 7.
    let p = case("dup");
    fs::copy(p.join("data_0.gulp"), p.join("data_7.gulp")).unwrap();
    fs::copy(p.join("meta_0.gmeta"), p.join("meta_7.gmeta")).unwrap();
    let (e, msg) = open_err(&p);
    assert!(matches!(e, Error::Gulp { .. }), "{msg}");
    assert!(
        msg.contains("meta_7.gmeta")
            && msg.contains("duplicate id \"1001\"")
            && msg.contains("meta_0.gmeta"),
        "{msg}"
    );
    let report = sanity_check(&p, &GulpOptions::default()).unwrap();
    let mut dups: Vec<&str> = report
        .problems
        .iter()
        .filter_map(|p| match p {
            SanityProblem::DuplicateId { id, metas } => {
                assert_eq!(metas.len(), 2);
                Some(id.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(report.problems.len(), dups.len(), "{report}");
    dups.sort();
    let py = gulpio2_sanity(&p);
    let mut py_dups = strs(&py["duplicate_ids"]);
    py_dups.sort();
    assert_eq!(dups, py_dups);

    // Missing pair.
    let p = case("missing");
    fs::remove_file(p.join("data_1.gulp")).unwrap();
    let (_, msg) = open_err(&p);
    assert!(
        msg.contains("meta_1.gmeta") && msg.contains("data_1.gulp"),
        "{msg}"
    );
    let report = sanity_check(&p, &GulpOptions::default()).unwrap();
    assert!(!report.is_ok());

    // Truncated data file: the last frame now ends past it.
    let p = case("truncated");
    let data = p.join("data_2.gulp");
    let len = fs::metadata(&data).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&data)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    let (_, msg) = open_err(&p);
    assert!(
        msg.contains("meta_2.gmeta") && msg.contains("\"last\"") && msg.contains("data_2.gulp"),
        "{msg}"
    );
    let report = sanity_check(&p, &GulpOptions::default()).unwrap();
    assert!(
        report.problems.contains(&SanityProblem::DataSize {
            path: data.clone(),
            expected: len,
            actual: len - 10
        }),
        "{report}"
    );
    let py = gulpio2_sanity(&p);
    assert_eq!(strs(&py["data_size"]), [data.to_str().unwrap()]);

    // Bad JSON.
    let p = case("badjson");
    let meta = p.join("meta_1.gmeta");
    let text = fs::read(&meta).unwrap();
    fs::write(&meta, &text[..text.len() / 2]).unwrap();
    let (e, msg) = open_err(&p);
    assert!(matches!(e, Error::Json { .. }), "{msg}");
    assert!(msg.contains("meta_1.gmeta"), "{msg}");

    // Empty files are reported by the sanity check, as gulpio2 does.
    let p = case("empty");
    fs::write(p.join("data_0.gulp"), b"").unwrap();
    let report = sanity_check(&p, &GulpOptions::default()).unwrap();
    assert!(
        report.problems.contains(&SanityProblem::EmptyData {
            path: p.join("data_0.gulp")
        }),
        "{report}"
    );
    assert_eq!(
        strs(&gulpio2_sanity(&p)["empty_data"]),
        [p.join("data_0.gulp").to_str().unwrap()]
    );
}

#[test]
fn hostile_frame_info_is_refused() {
    let (tmp, good, _) = written_by_gulpio2();
    let cases: &[(&str, Value, &str)] = &[
        (
            "pad",
            serde_json::json!([[0, 9, 8]]),
            "pad 9 is larger than length 8",
        ),
        ("negative", serde_json::json!([[-4, 0, 8]]), "negative"),
        ("two", serde_json::json!([[0, 0]]), "fewer than 3"),
        (
            "float",
            serde_json::json!([[0, 0.5, 8]]),
            "not a non-negative integer",
        ),
        (
            "string",
            serde_json::json!([["0", 0, 8]]),
            "not a non-negative integer",
        ),
        (
            "past_end",
            serde_json::json!([[1_000_000_000u64, 0, 8]]),
            "ends at byte 1000000008",
        ),
        (
            "overflow",
            serde_json::json!([[u64::MAX, 0, 8]]),
            "overflows",
        ),
        ("not_list", serde_json::json!({"a": 1}), "frame_info"),
    ];
    for (name, frame_info, want) in cases {
        let p = tmp.path().join(name);
        copy_dir(&good, &p);
        set_meta(&p.join("meta_1.gmeta"), |m| {
            m["7"]["frame_info"] = frame_info.clone();
        });
        let (e, msg) = open_err(&p);
        eprintln!("{name}: {msg}");
        assert!(matches!(e, Error::Gulp { .. }), "{name}: {msg}");
        assert!(
            msg.contains("meta_1.gmeta") && msg.contains("\"7\"") && msg.contains(want),
            "{name}: {msg}"
        );
        // The sanity check reports it instead of failing.
        let report = sanity_check(&p, &GulpOptions::default()).unwrap();
        assert!(!report.is_ok(), "{name}");
    }

    // Limits.
    let opts = GulpOptions {
        max_frames_per_id: 11,
        ..GulpOptions::default()
    };
    let e = GulpDirectory::open_with(&good, &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("meta_1.gmeta") && e.contains("\"7\"") && e.contains("more than 11 frames"),
        "{e}"
    );
    let opts = GulpOptions {
        max_meta_bytes: 500,
        ..GulpOptions::default()
    };
    let e = GulpDirectory::open_with(&good, &opts).unwrap_err();
    assert!(matches!(e, Error::TooLarge { limit: 500, .. }), "{e}");
    assert!(e.to_string().contains("meta_1.gmeta"), "{e}");

    // Unknown ids and out-of-range indices are errors, not panics.
    let dir = GulpDirectory::open(&good).unwrap();
    assert!(dir
        .frames("nope", &FrameSelection::All)
        .unwrap_err()
        .to_string()
        .contains("\"nope\""));
    let e = dir
        .frames("7", &FrameSelection::Indices(vec![12]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("out of range"), "{e}");
}
