//! Helpers shared by the integration tests.

pub mod mount;
pub mod video;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root (where Cargo.lock is), also when a crate's benches include this file.
pub fn root() -> &'static Path {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .unwrap_or(here)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set (relative to the workspace root),
/// else `<root>/target`. For scratch files that must be on a real disk, not a tmpfs `/tmp`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => root().join(d),
        _ => root().join("target"),
    }
}

/// The Python interpreter of the project's venv (numpy, zarr<3, numcodecs, gulpio2), created by
/// `scripts/py-env.sh` on first use. Panics, never skips, when it cannot be set up.
pub fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("scripts/py-env.sh"))
            .output()
            .expect("running scripts/py-env.sh");
        assert!(
            out.status.success(),
            "scripts/py-env.sh failed (the interop tests need it):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// Runs a Python script (given as source) with the venv interpreter and the given arguments;
/// panics with its stderr when it fails. Returns stdout.
pub fn run_python(script: &str, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("running python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n--- stderr ---\n{}",
        script,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The `roverlog` binary built for this test run: cargo builds the root package's binary for
/// its integration tests and puts it beside their `deps/` directory (`CARGO_BIN_EXE_roverlog`
/// exists only while a test of that package compiles, not in this crate). Panics naming the
/// path when it is not there (a test of another package, or the binary not built).
pub fn roverlog_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("CARGO_BIN_EXE_roverlog") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe.parent().expect("the test executable's directory");
    // target/<profile>/deps/<test> -> target/<profile>/roverlog
    let dir = if dir.ends_with("deps") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    let bin = dir.join("roverlog");
    assert!(
        bin.is_file(),
        "{}: no roverlog binary (only the roverlog package's tests are built with it)",
        bin.display()
    );
    bin
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads a trace with `tests/py/roverd_read.py` (the upstream reader's rules, numpy + lzma)
/// and with our reader, and asserts both see the same sensors, counts and decoded bytes.
pub fn assert_upstream_reads_same(trace: &Path) {
    let script = std::fs::read_to_string(root().join("tests/py/roverd_read.py")).unwrap();
    let theirs: serde_json::Value =
        serde_json::from_str(&run_python(&script, &[trace.as_os_str()])).unwrap();
    let t = roverlog_core::format::Trace::open(trace).unwrap();
    let names = t.sensor_names();
    assert_eq!(theirs.as_object().unwrap().len(), names.len(), "{theirs}");
    for name in names {
        let s = t.sensor(name).unwrap();
        let n = s.len().unwrap();
        assert_eq!(theirs[name]["samples"], n, "{name}");
        for (ch, _) in &s.meta().channels {
            let mut r = s.channel(ch).unwrap();
            let mut all = Vec::new();
            r.visit(0..n, |_, b| {
                all.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(
                theirs[name]["channels"][ch],
                sha256_hex(&all),
                "{name}/{ch}"
            );
        }
    }
}

/// The outcome of one `roverlog` run.
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// Whether it exited 0.
    pub fn ok(&self) -> bool {
        self.code == 0
    }

    /// stdout as text.
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stdout then stderr, for messages and for searching either.
    pub fn text(&self) -> String {
        format!("{}{}", self.out(), self.stderr)
    }
}

/// Runs the `roverlog` binary with `args` and waits for it.
pub fn roverlog<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    roverlog_env(args, &[])
}

/// [`roverlog`] with these environment variables set.
pub fn roverlog_env<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    env: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let out = Command::new(roverlog_bin())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("running roverlog");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A sensor's `meta.json` from `(name, format, dtype, shape)` per channel, each described
/// by `desc`.
pub fn sensor_meta(
    chans: &[(
        &str,
        roverlog_core::format::meta::ChannelFormat,
        roverlog_core::format::DType,
        Vec<usize>,
    )],
    desc: &str,
) -> roverlog_core::format::meta::SensorMeta {
    roverlog_core::format::meta::SensorMeta {
        channels: chans
            .iter()
            .map(|(n, f, t, shape)| {
                let meta = roverlog_core::format::meta::ChannelMeta::new(
                    f.clone(),
                    *t,
                    shape.clone(),
                    desc,
                );
                (n.to_string(), meta)
            })
            .collect(),
    }
}
