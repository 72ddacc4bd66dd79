//! `roverlog rosbag` (issue 28): a trace with a real-shaped Ouster `lidar.json` (128 beams,
//! 2048 columns), staggered depth frames and an IMU, written as a ROS 1 bag and as a ROS 2
//! MCAP bag, read back by the `rosbags` package (and `mcap` + `mcap-ros2-support`):
//! `tests/py/rosbag_check.py` compares topics, types, definitions and hashes, counts, frame
//! ids, stamps (upstream's timestamp models), IMU fields (orientation against scipy and a hand
//! computation) and every point against its own numpy projection from the Ouster formulas.

use crate::support::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::{roverlog, run_python};
use roverlog_core::format::meta::ChannelFormat;
use roverlog_core::format::{DType, SensorWriter, WriterOptions};
use serde_json::{json, Value};

const T0: f64 = 1.7e9;
// The OS1-128 `lidar.json` the rosbag bench writes too (ouster-sdk's layout, the keys the
// projection does not read included).
use roverlog_bench::rosbag_trace::{lidar_json, BEAMS, COLUMNS};
const FRAMES: usize = 9;
const IMU_SAMPLES: usize = 130;

/// Frame `f`: a smooth scene (2-40 m) with no-return pixels and a few returns under 0.5 m.
fn frame(f: usize) -> Vec<u16> {
    (0..BEAMS * COLUMNS)
        .map(|p| {
            let (b, c) = (p / COLUMNS, p % COLUMNS);
            let h = (p as u64 + 977 * f as u64).wrapping_mul(2_654_435_761) % 1000;
            if h < 90 {
                0
            } else if h < 100 {
                100 + h as u16 * 3
            } else {
                let wave = ((c as f64 / 97.0 + f as f64 * 0.1).sin() + 1.0) * 9000.0;
                (2000.0 + wave + b as f64 * 120.0 + h as f64) as u16
            }
        })
        .collect()
}

fn le<T: Copy>(v: &[T], f: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The trace `root/t`; the frames also go raw to `root/frames.u2` for the checker.
pub(crate) fn trace(root: &Path) -> PathBuf {
    let t = root.join("t");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let opts = WriterOptions::default();
    let mut w = SensorWriter::create(
        &t.join("lidar"),
        common::sensor_meta(
            &[("rng", ChannelFormat::Lzmaf, DType::U2, vec![BEAMS, COLUMNS])],
            "Range, in millimeters",
        ),
        &opts,
    )
    .unwrap();
    let mut raw = Vec::new();
    // 10 Hz with receive jitter and one dropped frame (after the 5th): `discretize` keeps
    // the gap at two periods.
    for f in 0..FRAMES {
        let k = if f < 5 { f } else { f + 1 };
        let jitter = [0.0021, -0.0013, 0.0007, 0.0, -0.0024][f % 5];
        let bytes = le(&frame(f), |x: u16| x.to_le_bytes().to_vec());
        w.append(T0 + 0.1 * k as f64 + jitter, &[&bytes]).unwrap();
        raw.extend_from_slice(&bytes);
    }
    w.finish().unwrap();
    std::fs::write(root.join("frames.u2"), raw).unwrap();
    std::fs::write(
        t.join("lidar/lidar.json"),
        serde_json::to_string_pretty(&lidar_json()).unwrap(),
    )
    .unwrap();

    let v3 = |n: &'static str| (n, ChannelFormat::Raw, DType::F4, vec![3]);
    let mut w = SensorWriter::create(
        &t.join("imu"),
        common::sensor_meta(&[v3("rot"), v3("acc"), v3("avel")], "imu"),
        &opts,
    )
    .unwrap();
    for i in 0..IMU_SAMPLES {
        let x = i as f32;
        // The first triple is a known one: 0.3, -0.2, 1.1 rad.
        let rot = [0.3 + 0.01 * x, -0.2 - 0.002 * x, 1.1 - 0.005 * x];
        let acc = [0.1 * x.sin(), 0.05, 9.81 + 0.01 * x];
        let avel = [0.001 * x, -0.002, 0.03 * x.cos()];
        let f4 = |a: [f32; 3]| le(&a, |v: f32| v.to_le_bytes().to_vec());
        let jitter = ((i * 7919) % 11) as f64 * 1e-4;
        w.append(
            T0 - 0.05 + 0.01 * i as f64 + jitter,
            &[&f4(rot), &f4(acc), &f4(avel)],
        )
        .unwrap();
    }
    w.finish().unwrap();
    t
}

fn check(bag: &Path, format: &str, trace: &Path, frames: &Path, min_range: &str) -> Value {
    check_imported(bag, format, trace, frames, min_range, None)
}

/// [`check`], and `imported` (the trace `roverlog import` made of `bag`) against the same
/// projected points.
fn check_imported(
    bag: &Path,
    format: &str,
    trace: &Path,
    frames: &Path,
    min_range: &str,
    imported: Option<&Path>,
) -> Value {
    let script = std::fs::read_to_string(common::root().join("tests/py/rosbag_check.py")).unwrap();
    let py_dir = common::root().join("tests/py");
    let mut args = vec![
        bag.as_os_str(),
        OsStr::new(format),
        trace.as_os_str(),
        frames.as_os_str(),
        OsStr::new(min_range),
        py_dir.as_os_str(),
    ];
    args.extend(imported.map(Path::as_os_str));
    let out = run_python(&script, &args);
    serde_json::from_str(out.trim()).unwrap()
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[test]
fn lidar_and_imu_read_back_from_ros1_and_ros2_bags() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let frames = dir.path().join("frames.u2");

    // Upstream's default output and `--min_range` spelling.
    let r = roverlog(&[os("rosbag"), t.as_os_str(), os("--min_range"), os("0.5")]);
    assert!(r.ok(), "{}", r.text());
    let bag = t.join("_scratch/lidar.bag");
    assert!(r.text().contains("/points2: 9 messages"), "{}", r.text());
    let s = check(&bag, "bag", &t, &frames, "0.5");
    assert_eq!(
        (s["imu"].as_u64(), s["points2"].as_u64()),
        (Some(130), Some(9))
    );
    let near = s["points"].as_u64().unwrap();

    // No minimum: only the pixels with no return go.
    let all = dir.path().join("all.bag");
    let r = roverlog(&[os("rosbag"), t.as_os_str(), os("--out"), all.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    let s = check(&all, "bag", &t, &frames, "none");
    let every = s["points"].as_u64().unwrap();
    assert!(
        every > near && every < (FRAMES * BEAMS * COLUMNS) as u64,
        "{near} {every}"
    );

    // ROS 2: a rosbag2 directory with MCAP storage, read by rosbags and by mcap-ros2-support.
    let r = roverlog(&[
        os("rosbag"),
        t.as_os_str(),
        os("--format"),
        os("mcap"),
        os("--min-range"),
        os("0.5"),
    ]);
    assert!(r.ok(), "{}", r.text());
    let ros2 = t.join("_scratch/lidar");
    assert!(ros2.join("lidar.mcap").is_file() && ros2.join("metadata.yaml").is_file());
    let s = check(&ros2, "mcap", &t, &frames, "0.5");
    assert_eq!(s["points"].as_u64(), Some(near));
    assert_eq!(s["mcap_ros2"]["/points2"].as_u64(), Some(9));
}

/// `roverlog rosbag --format mcap`, then `roverlog import` of it: `/points2` (an unorganized
/// cloud whose width is each frame's points in range) comes back as the projected points,
/// padded to the widest frame, with each frame's count in `points`.
#[test]
fn rosbag_mcap_imports_back_point_for_point() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let frames = dir.path().join("frames.u2");
    let bag = dir.path().join("bag");
    let r = roverlog(&[
        os("rosbag"),
        t.as_os_str(),
        os("--format"),
        os("mcap"),
        os("--min-range"),
        os("0.5"),
        os("--out"),
        bag.as_os_str(),
    ]);
    assert!(r.ok(), "{}", r.text());
    let imported = dir.path().join("imported");
    let r = roverlog(&[os("import"), bag.as_os_str(), imported.as_os_str()]);
    assert!(r.ok(), "{}", r.text());
    assert!(!r.text().contains("not imported"), "{}", r.text());
    let s = check_imported(&bag, "mcap", &t, &frames, "0.5", Some(&imported));
    assert_eq!(s["imported_points"], s["points"], "{s}");
    assert!(s["points"].as_u64().unwrap() > 0, "{s}");
    // The padded width is the widest frame's, from the trace side too.
    let trace = roverlog_core::format::Trace::open(&imported).unwrap();
    let lidar = trace.sensor("points2").unwrap();
    assert_eq!(
        lidar.meta().get("x").unwrap().shape,
        [s["padded_to"].as_u64().unwrap() as usize]
    );
    assert_eq!(lidar.len().unwrap(), FRAMES as u64);
}

#[test]
fn bad_input_is_named_and_leaves_no_bag() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let out = dir.path().join("x.bag");
    let run = |extra: &[&OsStr]| {
        let mut args = vec![os("rosbag"), t.as_os_str(), os("--out"), out.as_os_str()];
        args.extend_from_slice(extra);
        roverlog(&args)
    };

    // An existing output is refused and left alone.
    std::fs::write(&out, b"keep").unwrap();
    let r = run(&[]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), b"keep");
    std::fs::remove_file(&out).unwrap();

    let r = run(&[os("--imu"), os("gps")]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no imu sensor \"gps\""), "{}", r.stderr);

    // A lidar.json without a key the projection needs.
    let json = t.join("lidar/lidar.json");
    let mut v = lidar_json();
    v["beam_intrinsics"]
        .as_object_mut()
        .unwrap()
        .remove("beam_azimuth_angles");
    std::fs::write(&json, v.to_string()).unwrap();
    let r = run(&[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("lidar.json") && r.stderr.contains("beam_intrinsics.beam_azimuth_angles"),
        "{}",
        r.stderr
    );

    // Intrinsics for another frame size than the depth channel's.
    let mut v = lidar_json();
    v["lidar_data_format"]["columns_per_frame"] = json!(1024);
    std::fs::write(&json, v.to_string()).unwrap();
    let r = run(&[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("rng") && r.stderr.contains("[128, 2048]"),
        "{}",
        r.stderr
    );

    std::fs::remove_file(&json).unwrap();
    let r = run(&[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("lidar.json: missing"), "{}", r.stderr);

    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Upstream itself as ground truth: `tests/data/rosbag_upstream/` holds a trace written by
/// upstream roverd's own channel writers and the two ROS 1 bags its `roverd rosbag` wrote from
/// it (with `--min_range 0.5` and without; provenance in tests/data/README.md). Ours, from the
/// same trace, must hold the same messages: bag times, stamps, frame ids, IMU values and every
/// point bit for bit (`tests/py/rosbag_upstream_check.py`).
#[test]
fn the_bags_match_upstream_roverd_rosbag_on_its_own_trace() {
    let data = common::root().join("tests/data/rosbag_upstream");
    let dir = tempfile::tempdir().unwrap();
    let script =
        std::fs::read_to_string(common::root().join("tests/py/rosbag_upstream_check.py")).unwrap();
    for (upstream, extra) in [
        ("min_range_0.5.bag", &[os("--min_range"), os("0.5")][..]),
        ("no_min_range.bag", &[][..]),
    ] {
        let ours = dir.path().join(upstream);
        let trace = data.join("trace");
        let mut args = vec![
            os("rosbag"),
            trace.as_os_str(),
            os("--out"),
            ours.as_os_str(),
        ];
        args.extend_from_slice(extra);
        let r = roverlog(&args);
        assert!(r.ok(), "{}", r.text());
        let out = run_python(
            &script,
            &[data.join(upstream).as_os_str(), ours.as_os_str()],
        );
        let s: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(
            (s["/imu"].as_u64(), s["/points2"].as_u64()),
            (Some(70), Some(6)),
            "{upstream}: {s}"
        );
        // The points upstream's bags hold (their `data` sizes / 12): the script compared
        // them all, not none.
        let want = if extra.is_empty() { 45159 } else { 44161 };
        assert_eq!(s["points"].as_u64(), Some(want), "{upstream}: {s}");
    }
    // The trace is read only: nothing written into the fixture (no `_scratch`).
    assert!(!data.join("trace/_scratch").exists());
}
