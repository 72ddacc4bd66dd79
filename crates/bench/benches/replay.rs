//! Replay figures (issue 5): `roverlog replay --max-speed` throughput into a real daemon, and
//! timing accuracy at `--rate 1` (lateness of each sample against its schedule).
//!
//! Run: `cargo bench --bench replay` (writes a synthetic trace and the daemon's output under a
//! temp dir on the repository's filesystem: `target/bench-tmp`).
//!
//! `cargo bench --bench replay -- --blob-sync [--flush-ms N]` measures instead what fsyncing a
//! blob channel's files together gains through the daemon: `--max-speed` replays of that trace
//! and of eight 30 fps `jpg` cameras with `blob_sync_threads` 1 (one fsync at a time) and at
//! its default, alternating, same fsync policy. With `--flush-ms N` (root) the daemon writes
//! to a disk whose cache flush takes N ms (`benches/support/slow_disk.rs`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use roverlog_core::format::{
    ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};

#[path = "support/slow_disk.rs"]
mod slow_disk;

/// The release `roverlog` binary, built first (the binary is another crate of the workspace,
/// so cargo does not build it for this bench by itself).
fn roverlog_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "--release", "--quiet", "--bin", "roverlog"])
            .status()
            .expect("running cargo build for the roverlog binary");
        assert!(ok.success(), "cargo build --release --bin roverlog failed");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        root.join("target/release/roverlog")
    })
}

const SECONDS: usize = 30;

fn jpg_camera() -> ChannelMeta {
    ChannelMeta::new(
        ChannelFormat::Blob("jpg".into()),
        DType::U1,
        vec![480, 640, 3],
        "",
    )
}

/// The replay trace: imu, lidar, radar and one camera.
fn mixed_sensors() -> Vec<(String, ChannelMeta, f64)> {
    let sensors = vec![
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
        ("camera", jpg_camera(), 30.0),
    ];
    sensors
        .into_iter()
        .map(|(n, c, hz)| (n.to_string(), c, hz))
        .collect()
}

/// Writes `seconds` of `sensors` (blob samples of 60 kB) as a trace in `dir`.
fn write_trace(dir: &Path, sensors: Vec<(String, ChannelMeta, f64)>, seconds: usize) -> (u64, u64) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.yaml"), "{}\n").unwrap();
    let t0 = 1.7e9;
    let (mut samples, mut bytes) = (0, 0);
    for (name, ch, hz) in sensors {
        let fixed = ch.format.is_fixed_size();
        let size = if fixed { ch.sample_bytes() } else { 60_000 };
        let meta = SensorMeta {
            channels: vec![("data".into(), ch)],
        };
        let mut w = SensorWriter::create(&dir.join(name), meta, &WriterOptions::default()).unwrap();
        let buf: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        let n = (seconds as f64 * hz) as usize;
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

/// A daemon with its sockets in `dir`, writing to `data`, with `config` (JSON) if given.
fn start_daemon(dir: &Path, data: &Path, config: Option<&Path>) -> Daemon {
    let mut cmd = Command::new(roverlog_bin());
    cmd.arg("daemon");
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    let child = cmd
        .arg("--data-root")
        .arg(data)
        .arg("--ingest-socket")
        .arg(dir.join("in.sock"))
        .arg("--control-socket")
        .arg(dir.join("ctl.sock"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _ = std::fs::remove_file(dir.join("ctl.sock"));
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
    let out = Command::new(roverlog_bin())
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&root).unwrap();
    let tmp = tempfile::tempdir_in(&root).unwrap();
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--blob-sync") {
        let flush = args.iter().position(|a| a == "--flush-ms").map(|i| {
            let v = args.get(i + 1).expect("--flush-ms needs a number");
            let ms = v
                .parse()
                .unwrap_or_else(|_| panic!("--flush-ms {v}: not a whole number"));
            Duration::from_millis(ms)
        });
        return blob_sync_through_daemon(tmp.path(), flush);
    }
    let src = tmp.path().join("source");
    let (n, bytes) = write_trace(&src, mixed_sensors(), SECONDS);
    println!("source: {SECONDS} s of imu 1 kHz f4[6], lidar 10 Hz 128 KiB, radar 20 Hz 192 KiB, camera 30 Hz 60 kB jpg: {n} samples, {:.1} MB", bytes as f64 / 1e6);

    let d = start_daemon(tmp.path(), &tmp.path().join("data"), None);
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

/// `--blob-sync`: both traces replayed at max speed, one blob fsync at a time against the
/// default, alternating over rounds; the best samples/s of each. On the slow-flush disk when
/// `flush` is given, else in `tmp`.
fn blob_sync_through_daemon(tmp: &Path, flush: Option<Duration>) {
    let cameras: Vec<_> = (0..8)
        .map(|i| (format!("camera{i}"), jpg_camera(), 30.0))
        .collect();
    let traces = [
        (
            "the replay trace",
            tmp.join("mixed"),
            mixed_sensors(),
            SECONDS,
        ),
        ("8 cameras 30 fps jpg", tmp.join("cameras"), cameras, 10),
    ];
    for (what, dir, sensors, seconds) in &traces {
        let (n, bytes) = write_trace(dir, sensors.clone(), *seconds);
        println!("source {what}: {n} samples, {:.1} MB", bytes as f64 / 1e6);
    }
    let disk = flush.map(|f| {
        let disk = slow_disk::SlowDisk::new(&tmp.join("slow-disk"), 2 << 30, f);
        println!(
            "daemon data on ext4 on {} whose cache flush takes {} ms",
            disk.device(),
            f.as_millis()
        );
        disk
    });
    let data = disk.as_ref().map_or(tmp, |d| &d.mount).join("data");
    println!(
        "fsync periodic every 1 s (the default), data in {}",
        data.display()
    );
    let modes = [1, roverlog_core::format::blob::DEFAULT_SYNC_THREADS];
    let mut best = vec![vec![0f64; modes.len()]; traces.len()];
    for _round in 0..2 {
        for (m, threads) in modes.iter().enumerate() {
            let config = tmp.join(format!("config-{threads}.json"));
            std::fs::write(&config, format!("{{\"blob_sync_threads\": {threads}}}")).unwrap();
            for (t, (_, src, _, _)) in traces.iter().enumerate() {
                let d = start_daemon(tmp, &data, Some(&config));
                let r = replay(src, &tmp.join("in.sock"), &["--max-speed"]);
                drop(d);
                std::fs::remove_dir_all(&data).unwrap();
                let rate = r["samples_per_second"].as_f64().unwrap();
                best[t][m] = best[t][m].max(rate);
            }
        }
    }
    for (t, (what, ..)) in traces.iter().enumerate() {
        println!(
            "replay --max-speed, {what}: one fsync at a time {:.0} samples/s, up to {} at once {:.0} samples/s ({:.2}x)",
            best[t][0],
            modes[1],
            best[t][1],
            best[t][1] / best[t][0]
        );
    }
    if let Some(disk) = disk {
        println!("device flushes: {}", disk.flushes());
    }
}
