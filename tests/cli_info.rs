//! `roverlog info` on a roverd trace: the figures match what was written.

mod common;

use std::process::Command;

use roverlog::format::{
    ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};

#[test]
fn info_reports_samples_duration_rate_and_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.yaml"), "{}\n").unwrap();
    let m = SensorMeta {
        channels: vec![
            (
                "acc".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "m/s^2"),
            ),
            (
                "rng".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![64, 64], ""),
            ),
        ],
    };
    let mut w =
        SensorWriter::create(&tmp.path().join("lidar"), m, &WriterOptions::default()).unwrap();
    let zeros = vec![0u8; 64 * 64 * 2];
    for i in 0..101 {
        w.append(100.0 + i as f64 * 0.05, &[&[7u8; 12], &zeros])
            .unwrap();
    }
    w.finish().unwrap();
    let out = Command::new(common::roverlog_bin())
        .args(["info", "--json"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["sensors"][0];
    assert_eq!(s["sensor"], "lidar");
    assert_eq!(s["samples"], 101);
    assert!(
        (s["duration_s"].as_f64().unwrap() - 5.0).abs() < 1e-9,
        "{s}"
    );
    assert!((s["rate_hz"].as_f64().unwrap() - 20.0).abs() < 1e-9, "{s}");
    let ch = |name: &str| {
        s["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(ch("acc")["bytes"], 101 * 12);
    assert_eq!(ch("acc")["compression_ratio"], 1.0);
    assert_eq!(ch("ts")["bytes"], 101 * 8);
    let rng = ch("rng");
    let disk = std::fs::metadata(tmp.path().join("lidar/rng"))
        .unwrap()
        .len()
        + std::fs::metadata(tmp.path().join("lidar/rng_i"))
            .unwrap()
            .len();
    assert_eq!(rng["bytes"], disk);
    let ratio = rng["compression_ratio"].as_f64().unwrap();
    assert!(
        (ratio - (101.0 * 8192.0 / disk as f64)).abs() < 1e-9 && ratio > 10.0,
        "{rng}"
    );
    assert!((rng["bytes_per_second"].as_f64().unwrap() - disk as f64 / 5.0).abs() < 1e-6);

    // The table form names every channel.
    let out = Command::new(common::roverlog_bin())
        .arg("info")
        .arg(tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for word in ["lidar", "101 samples", "acc", "rng", "lzmaf", "20.00 Hz"] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
}
