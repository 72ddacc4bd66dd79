//! Replay figures (issue 5): `roverlog replay --max-speed` throughput into a real daemon, and
//! timing accuracy at `--rate 1` (lateness of each sample against its schedule).
//!
//! Run: `cargo bench --bench replay` (writes a synthetic trace and the daemon's output under a
//! temp dir on the repository's filesystem: `target/bench-tmp`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use roverlog::format::{
    ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};

const SECONDS: usize = 30;

fn write_trace(dir: &Path) -> (u64, u64) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "{}\n").unwrap();
    let t0 = 1.7e9;
    let sensors: Vec<(&str, ChannelMeta, f64)> = vec![
        (
            "imu",
            ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![6], ""),
            1000.0,
        ),
        (
            "lidar",
            ChannelMeta::new(ChannelFormat::Raw, DType::U2, vec![64, 1024], ""),
            10.0,
        ),
        (
            "radar",
            ChannelMeta::new(ChannelFormat::Raw, DType::I2, vec![64, 3, 4, 128], ""),
            20.0,
        ),
        (
            "camera",
            ChannelMeta::new(
                ChannelFormat::Blob("jpg".into()),
                DType::U1,
                vec![480, 640, 3],
                "",
            ),
            30.0,
        ),
    ];
    let (mut samples, mut bytes) = (0, 0);
    for (name, ch, hz) in sensors {
        let fixed = ch.format.is_fixed_size();
        let size = if fixed { ch.sample_bytes() } else { 60_000 };
        let meta = SensorMeta {
            channels: vec![("data".into(), ch)],
        };
        let mut w = SensorWriter::create(&dir.join(name), meta, &WriterOptions::default()).unwrap();
        let buf: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        let n = (SECONDS as f64 * hz) as usize;
        for i in 0..n {
            w.append(t0 + i as f64 / hz, &[&buf]).unwrap();
        }
        w.finish().unwrap();
        samples += n as u64;
        bytes += (n * size) as u64;
    }
    (samples, bytes)
}

struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn start_daemon(dir: &Path) -> Daemon {
    let child = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .args(["daemon", "--data-root"])
        .arg(dir.join("data"))
        .arg("--ingest-socket")
        .arg(dir.join("in.sock"))
        .arg("--control-socket")
        .arg(dir.join("ctl.sock"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::os::unix::net::UnixStream::connect(dir.join("ctl.sock")).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Daemon(child)
}

fn replay(src: &Path, sock: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_roverlog"))
        .arg("replay")
        .arg(src)
        .arg("--socket")
        .arg(sock)
        .args(extra)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
    std::fs::create_dir_all(&root).unwrap();
    let tmp = tempfile::tempdir_in(&root).unwrap();
    let src = tmp.path().join("source");
    let (n, bytes) = write_trace(&src);
    println!("source: {SECONDS} s of imu 1 kHz f4[6], lidar 10 Hz 128 KiB, radar 20 Hz 192 KiB, camera 30 Hz 60 kB jpg: {n} samples, {:.1} MB", bytes as f64 / 1e6);

    let d = start_daemon(tmp.path());
    let r = replay(&src, &tmp.path().join("in.sock"), &["--max-speed"]);
    println!(
        "replay --max-speed: {} samples in {:.2} s: {:.0} samples/s, {:.1} MB/s",
        r["samples"],
        r["seconds"].as_f64().unwrap(),
        r["samples_per_second"].as_f64().unwrap(),
        r["mb_per_second"].as_f64().unwrap()
    );
    let r = replay(
        &src,
        &tmp.path().join("in.sock"),
        &["--rate", "1", "--duration", "10"],
    );
    let late = &r["late_ms"];
    println!(
        "replay --rate 1 --duration 10: {} samples, late p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        r["samples"],
        late["p50"].as_f64().unwrap(),
        late["p99"].as_f64().unwrap(),
        late["max"].as_f64().unwrap()
    );
    let imu_only = replay(
        &src,
        &tmp.path().join("in.sock"),
        &["--rate", "1", "--duration", "10", "--sensors", "imu"],
    );
    let late = &imu_only["late_ms"];
    println!(
        "replay --rate 1 --duration 10 --sensors imu: {} samples, late p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        imu_only["samples"], late["p50"].as_f64().unwrap(), late["p99"].as_f64().unwrap(), late["max"].as_f64().unwrap()
    );
    drop(d);
}
