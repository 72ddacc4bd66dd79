//! A reader of stdout that goes away (`roverlog cat TRACE | head`) ends a verb quietly with
//! exit code 0, as other Unix tools do: no panic message, no death by SIGPIPE (exit 141 in a
//! shell); a stdout that fails otherwise (a full disk) is an error, exit 2.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::common;

/// Runs `roverlog args` with stdout a pipe whose reader is already gone: its first write
/// meets EPIPE. Returns the exit code (`None`: killed by a signal) and stderr.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(common::roverlog_bin())
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("running roverlog");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_closed_stdout_ends_cat_info_list_and_validate_with_0_and_no_message() {
    let dir = tempfile::tempdir().unwrap();
    let zarr = common::root().join("tests/data/l5kit_single_scene.zarr");
    let trace = dir.path().join("t");
    let r = common::roverlog(&["import", s(&zarr), s(&trace)]);
    assert!(r.ok(), "{}", r.text());
    for args in [
        vec!["cat", s(&trace), "agents/ts"],
        vec!["cat", s(&trace), "agents/ts", "--timestamps", "smooth"],
        vec!["cat", s(&zarr), "agents"],
        vec!["info", s(&trace)],
        vec!["info", s(&zarr)],
        vec!["list", s(dir.path())],
        vec!["validate", s(&trace)],
    ] {
        let (code, stderr) = with_closed_stdout(&args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_full_stdout_is_an_error_named_once() {
    let zarr = common::root().join("tests/data/l5kit_single_scene.zarr");
    for args in [vec!["cat", s(&zarr), "agents"], vec!["info", s(&zarr)]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = Command::new(common::roverlog_bin())
            .args(&args)
            .stdout(full)
            .output()
            .expect("running roverlog");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("No space left on device").count(),
            1,
            "{args:?}: {stderr}"
        );
    }
}
