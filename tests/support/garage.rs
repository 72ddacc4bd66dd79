//! A single-node Garage (the S3 server) on 127.0.0.1 ports in a temporary directory: layout
//! assigned and applied, one key, one bucket (`traces`) it may read and write. Killed when
//! dropped. The server is `roverlog_bench::offload::Garage`, the one `bench --only offload`
//! measures against; this wraps it for tests (a temp dir, panics that name what failed). The
//! binary comes from scripts/garage.sh (run by scripts/test); a test fails naming it when it
//! is missing.

use std::ffi::OsString;
use std::ops::Deref;

pub struct Garage {
    // Declared before the directory: the server is killed before its files go.
    server: roverlog_bench::offload::Garage,
    _dir: tempfile::TempDir,
}

impl Garage {
    pub fn start() -> Garage {
        let dir = tempfile::tempdir().unwrap();
        let server = roverlog_bench::offload::Garage::start(dir.path(), "traces")
            .unwrap_or_else(|e| panic!("starting Garage in {}: {e}", dir.path().display()));
        Garage { server, _dir: dir }
    }

    /// Runs a `garage` CLI command that must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        self.server.run(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A bucket the key may read and write.
    pub fn create_bucket(&self, name: &str) {
        self.run(&["bucket", "create", name]);
        self.run(&[
            "bucket",
            "allow",
            "--read",
            "--write",
            "--owner",
            name,
            "--key",
            &self.key_id,
        ]);
    }

    /// The `AWS_*` variables for this server.
    pub fn env(&self) -> Vec<(String, String)> {
        self.server
            .aws_env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// [`Garage::env`] as `Command::envs` takes it.
    pub fn envs(&self) -> Vec<(String, OsString)> {
        self.env()
            .into_iter()
            .map(|(k, v)| (k, OsString::from(v)))
            .collect()
    }
}

/// `endpoint`, `key_id`, `secret` and the rest of the server's.
impl Deref for Garage {
    type Target = roverlog_bench::offload::Garage;
    fn deref(&self) -> &Self::Target {
        &self.server
    }
}
