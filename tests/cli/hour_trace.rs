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
