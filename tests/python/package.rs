//! The Python package (`python/`): installs it into the project's venv with
//! `pip install ./python` (maturin from `scripts/requirements.txt`, the native extension built
//! in `target/python`) and runs its pytest suite (`python/tests/`), which checks it against
//! numpy, OpenCV and the upstream reading rules. Never skips: a failed install fails the test
//! with pip's output.

use crate::support::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to completion within `limit` (killed and failed after it, naming `what`);
/// returns its combined output, failing with it when the command fails.
fn run_bounded(mut cmd: Command, limit: Duration, what: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("out.log");
    let f = std::fs::File::create(&log).unwrap();
    let mut child = cmd
        .stdout(Stdio::from(f.try_clone().unwrap()))
        .stderr(Stdio::from(f))
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: still running after {limit:?}, killed:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{what} failed ({status}):\n{out}");
    out
}

fn venv_bin(py: &Path) -> &Path {
    py.parent().expect("the venv's bin directory")
}

#[test]
fn the_python_package_installs_and_passes_its_tests() {
    let py = common::python();
    let root = common::root();
    let path = format!(
        "{}:{}",
        venv_bin(py).display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut install = Command::new(py);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
        ])
        .arg(root.join("python"))
        .env("PATH", &path)
        .env("CARGO_TARGET_DIR", root.join("target/python"))
        // The committed python/Cargo.lock as it is: a stale one fails instead of being
        // rewritten in the working tree.
        .env("MATURIN_PEP517_ARGS", "--locked")
        .current_dir(root);
    run_bounded(install, Duration::from_secs(1800), "pip install ./python");
    let mut pytest = Command::new(py);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .env("PATH", &path)
        .env("ROVERLOG_BIN", env!("CARGO_BIN_EXE_roverlog"))
        // The wheel just installed, even beside an editable build (conftest.py).
        .env("ROVERLOG_TEST_PACKAGE", "installed")
        .current_dir(root.join("python/tests"));
    let out = run_bounded(pytest, Duration::from_secs(900), "pytest python/tests");
    assert!(out.contains(" passed"), "pytest ran nothing:\n{out}");
    assert!(!out.contains("skipped"), "no test may skip:\n{out}");
    println!("{out}");
}
