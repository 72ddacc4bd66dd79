//! An operating-system error reaches the user once: the binary prints an error with its
//! chain (`{:#}`), so a library error whose message holds the OS's text must not also give it
//! as its `source` (it printed `...: No space left on device: No space left on device`).

use crate::support::common::{self, mount::Mounted};

/// How often `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn a_missing_path_is_named_with_one_os_message() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-trace");
    let r = common::roverlog(&["info".as_ref(), missing.as_os_str()]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(r.stderr.contains("no-such-trace"), "{}", r.stderr);
    assert_eq!(
        count(&r.stderr, "No such file or directory"),
        1,
        "{}",
        r.stderr
    );
}

#[test]
fn a_full_disk_is_named_with_one_os_message() {
    // Too small for the gulp fixture's frames: the import meets ENOSPC writing one of them.
    let mnt = Mounted::tmpfs("16k");
    let src = common::root().join("tests/data/gulp_small");
    let out = mnt.path().join("t");
    let r = common::roverlog(&["import".as_ref(), src.as_os_str(), out.as_os_str()]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert_eq!(
        count(&r.stderr, "No space left on device"),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(".partial"),
        "the file is named: {}",
        r.stderr
    );
}
