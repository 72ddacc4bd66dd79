//! `roverlog info`, `validate` and `cat` on a GulpIO2 directory, against the fixture's
//! expected values (written by gulpio2).

use crate::support::common;

fn run(args: &[&std::ffi::OsStr]) -> (i32, Vec<u8>, String) {
    let r = common::roverlog(args);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn cat_writes_each_selected_frame_as_gulpio2_stored_it() {
    let dir = common::root().join("tests/data/gulp_small");
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::root().join("tests/data/gulp_small.expected.json")).unwrap(),
    )
    .unwrap();
    for (id, v) in expected["videos"].as_object().unwrap() {
        let prefixes: Vec<&str> = v["jpeg_sha256_prefix"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        for (i, want) in prefixes.iter().enumerate() {
            let rows = i.to_string();
            let (code, bytes, err) = run(&[
                "cat".as_ref(),
                dir.as_os_str(),
                id.as_ref(),
                "--rows".as_ref(),
                rows.as_ref(),
            ]);
            assert_eq!(code, 0, "{err}");
            assert!(
                bytes.starts_with(&[0xFF, 0xD8]) && bytes.ends_with(&[0xFF, 0xD9]),
                "{id}[{i}] is not one whole JPEG"
            );
            let got = common::sha256_hex(&bytes);
            assert_eq!(&got[..16], *want, "{id}[{i}]");
        }
    }
    // The slice example: frames 1 and 3, back to back.
    let ex = &expected["slice_example"];
    let id = ex["id"].as_str().unwrap();
    let (_, all, _) = run(&["cat".as_ref(), dir.as_os_str(), id.as_ref()]);
    let (_, sliced, _) = run(&[
        "cat".as_ref(),
        dir.as_os_str(),
        id.as_ref(),
        "--rows".as_ref(),
        ex["slice"].as_str().unwrap().as_ref(),
    ]);
    let one = |i: u64| {
        run(&[
            "cat".as_ref(),
            dir.as_os_str(),
            id.as_ref(),
            "--rows".as_ref(),
            i.to_string().as_ref(),
        ])
        .1
    };
    let want: Vec<u8> = ex["frames_selected"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| one(i.as_u64().unwrap()))
        .collect();
    assert_eq!(sliced, want);
    assert!(all.len() > sliced.len());
    let (code, _, err) = run(&["cat".as_ref(), dir.as_os_str(), "no-such-id".as_ref()]);
    assert_eq!(code, 2);
    assert!(err.contains("no-such-id"), "{err}");
}

#[test]
fn info_and_validate_understand_gulp_directories() {
    let dir = common::root().join("tests/data/gulp_small");
    let (code, out, _) = run(&["info".as_ref(), dir.as_os_str()]);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 0);
    assert!(out.contains("2 chunks, 5 ids, 31 frames"), "{out}");
    let (code, out, _) = run(&["validate".as_ref(), dir.as_os_str()]);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out));

    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("g");
    std::fs::create_dir(&broken).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), broken.join(e.file_name())).unwrap();
    }
    let data = broken.join("data_1.gulp");
    let len = std::fs::metadata(&data).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&data)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    let (code, out, _) = run(&["validate".as_ref(), broken.as_os_str()]);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("data_1.gulp"),
        "the problem names the file: {out}"
    );
}
