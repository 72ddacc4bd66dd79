//! A single-node Garage (the S3 server) on 127.0.0.1 ports in a temporary directory: layout
//! assigned and applied, one key, one bucket (`traces`) it may read and write. Killed when dropped.
//! The binary comes from scripts/garage.sh (run by scripts/test); a test fails naming it
//! when it is missing.

use std::ffi::OsString;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where scripts/garage.sh puts the binary.
pub fn garage_bin() -> PathBuf {
    let cache = std::env::var_os("ROVERLOG_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/roverlog"),
        PathBuf::from,
    );
    let bin = cache.join("garage-2.5.0/bin/garage");
    assert!(
        bin.is_file(),
        "Garage 2.5.0 is missing at {}: scripts/garage.sh builds it (scripts/test runs it)",
        bin.display()
    );
    bin
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Garage {
    child: Child,
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub endpoint: String,
    pub key_id: String,
    pub secret: String,
}

impl Garage {
    pub fn start() -> Garage {
        let bin = garage_bin();
        let dir = tempfile::tempdir().unwrap();
        let (rpc, s3, admin) = (free_port(), free_port(), free_port());
        let d = dir.path().display();
        std::fs::write(
            dir.path().join("garage.toml"),
            format!(
                "metadata_dir = \"{d}/meta\"\ndata_dir = \"{d}/data\"\ndb_engine = \"sqlite\"\n\
                 replication_factor = 1\nrpc_bind_addr = \"127.0.0.1:{rpc}\"\n\
                 rpc_public_addr = \"127.0.0.1:{rpc}\"\n\
                 rpc_secret = \"{:064x}\"\n\
                 [s3_api]\ns3_region = \"garage\"\napi_bind_addr = \"127.0.0.1:{s3}\"\n\
                 root_domain = \".s3.garage.localhost\"\n\
                 [admin]\napi_bind_addr = \"127.0.0.1:{admin}\"\n",
                u128::from(std::process::id()) << 16 | u128::from(rpc)
            ),
        )
        .unwrap();
        let child = Command::new(&bin)
            .arg("-c")
            .arg(dir.path().join("garage.toml"))
            .arg("server")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("server.log")).unwrap())
            .spawn()
            .expect("starting garage server");
        let mut g = Garage {
            child,
            dir,
            bin,
            endpoint: format!("http://127.0.0.1:{s3}"),
            key_id: String::new(),
            secret: String::new(),
        };
        // Up when its CLI reaches it over RPC (bounded).
        let t0 = Instant::now();
        loop {
            let out = g.cmd(&["status"]).output().unwrap();
            if out.status.success() {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "garage did not answer `status` within 30 s: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(g.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let id = g.run(&["node", "id", "-q"]);
        let node = id.trim().split('@').next().unwrap().to_string();
        g.run(&["layout", "assign", "-z", "dc1", "-c", "10G", &node]);
        g.run(&["layout", "apply", "--version", "1"]);
        let key = g.run(&["key", "create", "offload-test"]);
        let field = |name: &str| {
            key.lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name:?} in `garage key create`: {key}"))
                .trim()
                .to_string()
        };
        g.key_id = field("Key ID:");
        g.secret = field("Secret key:");
        g.create_bucket("traces");
        g
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("-c")
            .arg(self.dir.path().join("garage.toml"))
            .args(args);
        c
    }

    /// Runs a `garage` CLI command that must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "garage {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
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
        vec![
            ("AWS_ENDPOINT_URL".into(), self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID".into(), self.key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY".into(), self.secret.clone()),
            ("AWS_REGION".into(), "garage".into()),
        ]
    }

    /// [`Garage::env`] as `Command::envs` takes it.
    pub fn envs(&self) -> Vec<(String, OsString)> {
        self.env()
            .into_iter()
            .map(|(k, v)| (k, OsString::from(v)))
            .collect()
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
