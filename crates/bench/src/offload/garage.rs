//! A single-node Garage (the S3 server the offload is measured against) on 127.0.0.1 ports
//! in a directory of the bench's: layout applied, one key, one bucket it may read and write.
//! Killed when dropped. The binary is the one scripts/garage.sh builds (scripts/test runs
//! it); a missing one is an error naming the script.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::OffloadBenchError as E;

/// Where scripts/garage.sh puts the binary.
pub fn garage_bin() -> Result<PathBuf, E> {
    let cache = std::env::var_os("ROVERLOG_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/roverlog"),
        PathBuf::from,
    );
    let bin = cache.join("garage-2.5.0/bin/garage");
    if !bin.is_file() {
        return Err(E::Missing {
            what: "Garage 2.5.0",
            path: bin,
            how: "scripts/garage.sh builds it (scripts/test runs it)",
        });
    }
    Ok(bin)
}

fn free_port() -> Result<u16, E> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| E::io("a free port", e))?;
    Ok(l.local_addr().map_err(|e| E::io("a free port", e))?.port())
}

pub struct Garage {
    child: Child,
    dir: PathBuf,
    bin: PathBuf,
    pub endpoint: String,
    pub key_id: String,
    pub secret: String,
}

impl Garage {
    /// Starts it in `dir` (created) with bucket `bucket`.
    pub fn start(dir: &Path, bucket: &str) -> Result<Garage, E> {
        let bin = garage_bin()?;
        std::fs::create_dir_all(dir).map_err(|e| E::io(dir.display().to_string(), e))?;
        let (rpc, s3, admin) = (free_port()?, free_port()?, free_port()?);
        let d = dir.display();
        let conf = dir.join("garage.toml");
        std::fs::write(
            &conf,
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
        .map_err(|e| E::io(conf.display().to_string(), e))?;
        let log = std::fs::File::create(dir.join("server.log"))
            .map_err(|e| E::io("garage's server.log", e))?;
        let child = Command::new(&bin)
            .arg("-c")
            .arg(&conf)
            .arg("server")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| E::io(bin.display().to_string(), e))?;
        let mut g = Garage {
            child,
            dir: dir.to_path_buf(),
            bin,
            endpoint: format!("http://127.0.0.1:{s3}"),
            key_id: String::new(),
            secret: String::new(),
        };
        let t0 = Instant::now();
        while g.run(&["status"]).is_err() {
            if t0.elapsed() > Duration::from_secs(30) {
                return Err(E::Garage {
                    args: "status".into(),
                    detail: "no answer within 30 s".into(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let id = g.run(&["node", "id", "-q"])?;
        let node = id.trim().split('@').next().unwrap_or("").to_string();
        g.run(&["layout", "assign", "-z", "dc1", "-c", "10G", &node])?;
        g.run(&["layout", "apply", "--version", "1"])?;
        let key = g.run(&["key", "create", "bench"])?;
        let field = |name: &str| {
            key.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .ok_or_else(|| E::Garage {
                    args: "key create bench".into(),
                    detail: format!("no {name:?} in its answer"),
                })
        };
        g.key_id = field("Key ID:")?;
        g.secret = field("Secret key:")?;
        g.run(&["bucket", "create", bucket])?;
        g.run(&[
            "bucket", "allow", "--read", "--write", "--owner", bucket, "--key", &g.key_id,
        ])?;
        Ok(g)
    }

    /// A `garage` CLI command that must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> Result<String, E> {
        let out = Command::new(&self.bin)
            .arg("-c")
            .arg(self.dir.join("garage.toml"))
            .args(args)
            .output()
            .map_err(|e| E::io(self.bin.display().to_string(), e))?;
        if !out.status.success() {
            return Err(E::Garage {
                args: args.join(" "),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The `AWS_*` variables for this server.
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", self.key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret.clone()),
            ("AWS_REGION", "garage".into()),
        ]
    }

    /// The same for rclone's on-the-fly `:s3:` remote.
    pub fn rclone_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RCLONE_S3_PROVIDER", "Other".into()),
            ("RCLONE_S3_ENDPOINT", self.endpoint.clone()),
            ("RCLONE_S3_ACCESS_KEY_ID", self.key_id.clone()),
            ("RCLONE_S3_SECRET_ACCESS_KEY", self.secret.clone()),
            ("RCLONE_S3_REGION", "garage".into()),
        ]
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
