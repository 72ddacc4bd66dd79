//! `roverlog cat` and `info` on the L5Kit zarr fixture, against the sha256 values
//! zarr-python computed (`array[:].tobytes()`).

use crate::support::common;

use std::process::Command;

fn cat(args: &[&str]) -> (i32, Vec<u8>, String) {
    let dir = common::root().join("tests/data/l5kit_single_scene.zarr");
    let mut all = vec!["cat".as_ref(), dir.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    let r = common::roverlog(&all);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn cat_matches_zarr_python_bytes() {
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::root().join("tests/data/l5kit_single_scene.expected.json")).unwrap(),
    )
    .unwrap();
    for (name, a) in expected["arrays"].as_object().unwrap() {
        let (code, bytes, err) = cat(&[name]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            bytes.len() as u64,
            a["shape"][0].as_u64().unwrap() * a["itemsize"].as_u64().unwrap()
        );
        assert_eq!(
            common::sha256_hex(&bytes),
            a["sha256_of_all_rows_raw_bytes"].as_str().unwrap(),
            "{name}"
        );
    }
    // Rows and a field: frames[10].ego_translation.
    let (_, bytes, _) = cat(&["frames", "--rows", "10:11", "--field", "ego_translation"]);
    let got: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f64> = expected["spot_values"]["frames[10].ego_translation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, want);
    // Row ranges concatenate to the whole.
    let (_, all, _) = cat(&["agents"]);
    let (_, a, _) = cat(&["agents", "--rows", ":19999"]);
    let (_, b, _) = cat(&["agents", "--rows", "19999:"]);
    assert_eq!([a, b].concat(), all);
    for (args, want) in [
        (&["nope"][..], "no zarr array"),
        (&["agents", "--field", "nope"][..], "nope"),
        (&["agents", "--rows", "1:9:2"][..], "without a step"),
    ] {
        let (code, _, err) = cat(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn info_describes_a_zarr_group() {
    let dir = common::root().join("tests/data/l5kit_single_scene.zarr");
    let out = Command::new(common::roverlog_bin())
        .arg("info")
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    for want in [
        "[agents]",
        "[20802]",
        "Blosc(cname='lz4'",
        "[traffic_light_faces]",
        "('host', '<U16')",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn info_lists_an_unparseable_array_as_unreadable_and_describes_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("g.zarr");
    let write = |p: &str, b: &[u8]| {
        let p = g.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b).unwrap();
    };
    write(".zgroup", br#"{"zarr_format": 2}"#);
    let zarray = |dtype: &str, filters: &str| {
        format!(
            r#"{{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "{dtype}",
                "compressor": null, "fill_value": null, "order": "C", "filters": {filters}}}"#
        )
    };
    write("good/.zarray", zarray("<f8", "null").as_bytes());
    write("good/0", &[1.5f64, 2.5].map(f64::to_le_bytes).concat());
    // zarr-python writes text as an object array with a vlen-utf8 filter; we do not read it.
    write(
        "names/.zarray",
        zarray("|O", r#"[{"id": "vlen-utf8"}]"#).as_bytes(),
    );
    write("names/0", b"\x02\0\0\0\x01\0\0\0a\x01\0\0\0b");
    let r = common::roverlog(&["info".as_ref(), g.as_os_str()]);
    let text = r.text();
    assert!(
        r.ok(),
        "info failed on a group with one object array:\n{text}"
    );
    assert!(text.contains("[good]") && text.contains("<f8"), "{text}");
    let names = &text[text.find("[names]").expect("[names] listed")..];
    assert!(
        names.contains("unreadable") && names.contains(r#"unsupported dtype "|O""#),
        "{text}"
    );
    // The readable array still reads.
    let r = common::roverlog(&["cat".as_ref(), g.as_os_str(), "good".as_ref()]);
    assert!(r.ok(), "{}", r.text());
    assert_eq!(r.stdout, [1.5f64, 2.5].map(f64::to_le_bytes).concat());
    // A short chunk is an error naming the chunk, said once (a wrapped error printed as its
    // own message and again as its source read "...: why: why").
    write("short/.zarray", zarray("<f8", "null").as_bytes());
    write("short/0", b"abc");
    let r = common::roverlog(&["cat".as_ref(), g.as_os_str(), "short".as_ref()]);
    let text = r.text();
    assert!(!r.ok(), "{text}");
    assert_eq!(
        text.matches("raw chunk is 3 bytes, expected 16").count(),
        1,
        "{text}"
    );
    assert!(text.contains("short/0"), "{text}");
}
