//! `examples/driver.py`, the stdlib-only driver newcomers copy, against the real daemon:
//! what it sends is on disk, and it rides out a daemon restart by reconnecting
//! (docs/protocol.md 6). Needs only `python3`, as the README says.

use crate::support::daemon;

use std::process::{Command, Stdio};

use daemon::*;
use serde_json::json;

fn example(d: &TestDaemon, sensor: &str) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/driver.py"))
        .arg("--socket")
        .arg(d.ingest_path())
        .args(["--sensor", sensor]);
    cmd
}

#[test]
fn the_example_driver_records_what_it_sends() {
    let d = TestDaemon::start(json!({}));
    let driver = example(&d, "imu")
        .args(["--rate", "2000", "--count", "300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(driver, 60, "the example driver sending 300 samples");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("sent 300 samples; durable: 300"), "{text}");
    let (ts, acc) = read_sensor(&d.trace_dir(), "imu", "acc");
    assert_eq!(ts.len(), 300);
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "timestamps in order");
    assert!(acc.iter().all(|a| a.len() == 12), "f4 [3] per sample");
}

/// `--file` puts a file into the sensor's directory (the hello's sidecar files, protocol.md
/// 2.6): byte for byte, beside the samples.
#[test]
fn the_example_driver_sends_a_sidecar_file() {
    let mut d = TestDaemon::start(json!({}));
    let calib = d.dir.path().join("calib.json");
    let bytes = b"{\"bias\": [0.01, -0.02, 0.0]}\n\x00\xff".to_vec();
    std::fs::write(&calib, &bytes).unwrap();
    let driver = example(&d, "imu")
        .args(["--rate", "2000", "--count", "20", "--file"])
        .arg(&calib)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(
        driver,
        60,
        "the example driver sending 20 samples and a file",
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("\"files\": true"),
        "the reply says so: {text}"
    );
    let trace = d.trace_dir();
    assert!(d.stop().success());
    assert_eq!(std::fs::read(trace.join("imu/calib.json")).unwrap(), bytes);
    assert_eq!(read_sensor(&trace, "imu", "acc").0.len(), 20);
}

#[test]
fn the_example_driver_reconnects_when_the_daemon_restarts() {
    let mut d = TestDaemon::start(json!({}));
    let driver = example(&d, "imu")
        .args(["--rate", "500", "--count", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    d.wait_status("the driver records", |st| {
        st["sensors"]["imu"]["samples"].as_u64() >= Some(50)
    });
    let first = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    d.spawn();
    let second = d.trace_dir();
    assert_ne!(
        first, second,
        "a clean stop ends the trace; the restart starts a new one"
    );
    d.wait_status("the driver is back and records again", |st| {
        st["sensors"]["imu"]["samples"].as_u64() >= Some(50)
    });
    // Ctrl-C: the example asks for durability one last time and exits 130.
    // SAFETY: a signal to the child we spawned and have not waited for.
    assert_eq!(unsafe { libc::kill(driver.id() as i32, libc::SIGINT) }, 0);
    let out = output_within(driver, 30, "the example driver after SIGINT");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("reconnecting"), "{stderr}");
    assert!(stdout.contains("reconnected: "), "{stdout}");
    // Both traces hold what the driver sent to each.
    for trace in [&first, &second] {
        let (ts, _) = read_sensor(trace, "imu", "gyro");
        assert!(ts.len() >= 50, "{}: {} samples", trace.display(), ts.len());
    }
}
