//! The generator of `roverlog bench --only full-size` (`roverlog_bench::hour`) writes valid
//! traces: at 100 samples per sensor, the rig trace and the formats trace pass
//! `roverlog validate --deep` and hold the counts asked for. (The bench's figures come from
//! the hour-long trace; what is checked here is that its generator is correct.)

use crate::support::common;

use roverlog_bench::hour::{self, RigShape};
use roverlog_core::format::{Sensor, Trace};

#[test]
fn generated_rig_and_formats_traces_are_valid() {
    let d = tempfile::tempdir().unwrap();
    let shape = RigShape::samples(100);
    let rig = d.path().join("rig");
    let formats = d.path().join("formats");
    let mut calls = 0;
    hour::write_rig_trace(&rig, &shape, &mut |_| calls += 1).unwrap();
    hour::write_formats_trace(&formats, &shape, &mut |_| {}).unwrap();
    assert!(calls > 0, "progress was never reported");

    let run = common::roverlog(&[
        "validate".as_ref(),
        "--deep".as_ref(),
        rig.as_os_str(),
        formats.as_os_str(),
    ]);
    assert!(run.ok(), "validate --deep: {}", run.text());

    let trace = Trace::open(&rig).unwrap();
    let mut names = hour::RIG_SENSORS.to_vec();
    names.sort();
    assert_eq!(trace.sensor_names(), names);
    for (sensor, want) in [
        ("camera", 100),
        ("lidar", 100),
        ("radar", 100),
        ("imu", 100),
    ] {
        let s = trace.sensor(sensor).unwrap();
        assert_eq!(s.len().unwrap(), want, "{sensor}");
        for (name, _) in s.meta().data_channels() {
            assert_eq!(
                s.channel(name).unwrap().len().unwrap(),
                want,
                "{sensor}/{name}"
            );
        }
    }
    for (sensor, channel) in [("jpg", "img"), ("npz", "iq"), ("lzma", "acc")] {
        let s = Sensor::open(&formats.join(sensor)).unwrap();
        assert_eq!(s.len().unwrap(), 100, "{sensor}");
        let mut c = s.channel(channel).unwrap();
        assert_eq!(c.len().unwrap(), 100, "{sensor}/{channel}");
        assert!(!c.get(99).unwrap().is_empty());
    }
    // Timestamps ascend at each sensor's rate.
    let imu = trace.sensor("imu").unwrap().timestamps().unwrap();
    assert!(imu.windows(2).all(|w| w[1] > w[0]));
    let span = imu[99] - imu[0];
    assert!(
        (span - 0.99).abs() < 0.01,
        "imu spans {span} s over 100 samples"
    );
}

#[test]
fn hour_shape_has_the_rigs_counts() {
    let h = RigShape::HOUR;
    assert_eq!(
        (h.camera, h.lidar, h.radar, h.imu),
        (108_000, 36_000, 72_000, 360_000)
    );
}

/// `roverlog bench --only hour-trace` (what `python/benches/dataloader.py` samples) runs
/// alone, keeps the rig trace it wrote and prints its path; the trace is valid, holds the
/// counts asked for, and its video channel has no `args` (upstream roverd's video channel
/// refuses `fps`, so the same trace can be read by both sides of the bench).
#[test]
fn bench_hour_trace_keeps_a_valid_trace_and_prints_its_path() {
    use std::process::Command;

    let base = tempfile::tempdir().unwrap();
    let run = |only: &str| {
        Command::new(common::roverlog_bin())
            .args(["bench", "--only", only, "--quick", "--dir"])
            .arg(base.path())
            .output()
            .unwrap()
    };
    let alone = run("hour-trace,imu");
    assert_eq!(alone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("runs alone"));

    let out = run("hour-trace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench --only hour-trace: {stderr}");
    let path = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert!(
        path.starts_with(base.path().canonicalize().unwrap()) && path.join("config.yaml").is_file(),
        "printed {path:?}; stderr: {stderr}"
    );
    let check = common::roverlog(&["validate".as_ref(), path.as_os_str()]);
    assert!(check.ok(), "validate: {}", check.text());
    let shape = RigShape::seconds(120);
    let trace = Trace::open(&path).unwrap();
    for (sensor, want) in [
        ("camera", shape.camera),
        ("lidar", shape.lidar),
        ("imu", shape.imu),
    ] {
        assert_eq!(
            trace.sensor(sensor).unwrap().len().unwrap(),
            want,
            "{sensor}"
        );
    }
    let camera = Sensor::open(&path.join("camera")).unwrap();
    assert_eq!(camera.meta().get("video.avi").unwrap().args, None);
}
