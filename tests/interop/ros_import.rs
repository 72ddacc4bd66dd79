//! `roverlog import` of ROS recordings written by the tools robotics teams use:
//! `tests/py/ros_bags_write.py` writes the same messages (Imu, CompressedImage, Image in four
//! encodings, NavSatFix, PointCloud2, LaserScan, PoseStamped, and topics that must be
//! skipped) with mcap-ros2-support's writer (`.mcap`), rosbags' rosbag2 writer (MCAP storage)
//! and rosbags' ROS 1 bag writer, and what each channel must hold (Euler angles by scipy).
//! We import each and compare value by value with our reader, and the whole trace with the
//! upstream reader's rules (numpy).

use crate::support::common;

use std::path::{Path, PathBuf};

use base64::Engine;
use roverlog_core::format::events::{read_events, Event};
use roverlog_core::format::{DType, Trace};
use serde_json::Value;

pub(crate) struct Bags {
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    pub expected: Value,
}

pub(crate) fn write_bags() -> Bags {
    write_with("ros_bags_write.py")
}

/// Runs `tests/py/SCRIPT DIR` in a new temporary directory: the script writes recordings and
/// `expected.json` there.
pub(crate) fn write_with(script: &str) -> Bags {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::python())
        .arg(common::root().join("tests/py").join(script))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected =
        serde_json::from_slice(&std::fs::read(dir.path().join("expected.json")).unwrap()).unwrap();
    Bags {
        dir: dir.path().to_path_buf(),
        _dir: dir,
        expected,
    }
}

/// Sample bytes as numbers (little-endian; every type here fits an f64 exactly).
pub(crate) fn values(dtype: DType, b: &[u8]) -> Vec<f64> {
    let n = dtype.itemsize();
    b.chunks_exact(n)
        .map(|c| match dtype {
            DType::U1 | DType::B1 => c[0] as f64,
            DType::I1 => c[0] as i8 as f64,
            DType::U2 => u16::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::I2 => i16::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::U4 => u32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::I4 => i32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F4 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F8 => f64::from_le_bytes(c.try_into().unwrap()),
            other => panic!("no test values of {other:?}"),
        })
        .collect()
}

pub(crate) fn import(src: &Path, out: &Path, extra: &[&str]) -> common::Run {
    let mut args = vec!["import".as_ref(), src.as_os_str(), out.as_os_str()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    common::roverlog(&args)
}

/// Imports `name` and checks every topic, channel and value against expected.json.
pub(crate) fn check_import(bags: &Bags, name: &str, log_stamps: bool) {
    check_import_as(bags, name, log_stamps, false)
}

/// [`check_import`]; `pre_iron`: a recording without stored definitions, whose topics of
/// non-standard types are skipped (expected.json's `pre_iron`).
fn check_import_as(bags: &Bags, name: &str, log_stamps: bool, pre_iron: bool) {
    let out = bags.dir.join(format!("out-{name}-{log_stamps}"));
    let extra: &[&str] = if log_stamps { &["--stamp", "log"] } else { &[] };
    let r = import(&bags.dir.join(name), &out, extra);
    assert!(r.ok(), "import {name}: {}", r.text());
    let trace = Trace::open(&out).unwrap();
    let mut topics = bags.expected["topics"].as_object().unwrap().clone();
    let mut skipped = bags.expected["skipped"].as_object().unwrap().clone();
    if pre_iron {
        for t in bags.expected["pre_iron"]["not_imported"]
            .as_array()
            .unwrap()
        {
            assert!(topics.remove(t.as_str().unwrap()).is_some(), "{t}");
        }
        skipped = bags.expected["pre_iron"]["skipped"]
            .as_object()
            .unwrap()
            .clone();
    }
    let topics = &topics;
    assert_eq!(
        trace.sensor_names().len(),
        topics.len(),
        "{:?}",
        trace.sensor_names()
    );
    for (topic, e) in topics {
        let sensor = trace.sensor(e["sensor"].as_str().unwrap()).unwrap();
        let what = format!("{name} {topic}");
        let want_ts = e[if log_stamps { "log" } else { "stamps" }]
            .as_array()
            .unwrap();
        let ts = sensor.timestamps().unwrap();
        assert_eq!(ts.len(), want_ts.len(), "{what}: samples");
        for (a, b) in ts.iter().zip(want_ts) {
            assert!(
                (a - b.as_f64().unwrap()).abs() < 1e-6,
                "{what}: ts {a} vs {b}"
            );
        }
        if let Some(blob) = e.get("blob") {
            let ch = blob["channel"].as_str().unwrap();
            let meta = sensor.meta().get(ch).unwrap().clone();
            assert_eq!(
                serde_json::json!(meta.shape),
                blob["shape"],
                "{what}: jpeg shape"
            );
            let mut r = sensor.channel(ch).unwrap();
            for (k, f) in blob["files"].as_array().unwrap().iter().enumerate() {
                let want = base64::engine::general_purpose::STANDARD
                    .decode(f.as_str().unwrap())
                    .unwrap();
                assert_eq!(*r.get(k as u64).unwrap(), want[..], "{what}: jpeg {k}");
            }
        }
        for (ch, c) in e
            .get("channels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let meta = sensor
                .meta()
                .get(ch)
                .unwrap_or_else(|| panic!("{what}: no channel {ch}"))
                .clone();
            assert_eq!(
                meta.dtype.code(),
                c["dtype"].as_str().unwrap(),
                "{what}/{ch} type"
            );
            assert_eq!(
                serde_json::json!(meta.shape),
                c["shape"],
                "{what}/{ch} shape"
            );
            let mut r = sensor.channel(ch).unwrap();
            for (k, want) in c["values"].as_array().unwrap().iter().enumerate() {
                let got = values(meta.dtype, &r.get(k as u64).unwrap());
                let want: Vec<f64> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                assert_eq!(got.len(), want.len(), "{what}/{ch} sample {k}");
                // f4 channels of f8 message values: compared after rounding to f32 (Euler
                // angles, computed in f64 by scipy and by us, may differ in the last f32 bit).
                let tol = if meta.dtype == DType::F4 { 4e-7 } else { 1e-12 };
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= tol * w.abs().max(1.0),
                        "{what}/{ch} sample {k} value {i}: {g} vs {w}"
                    );
                }
            }
        }
    }
    // The skipped topics: printed, and in the trace's events.
    let text = r.out();
    let events = read_events(&out).unwrap();
    for (topic, word) in &skipped {
        let word = word.as_str().unwrap();
        assert!(
            text.lines()
                .any(|l| l.contains(topic.as_str()) && l.contains(word)),
            "{name}: {topic} ({word}) not reported:\n{text}"
        );
        assert!(
            events.iter().any(|e| matches!(&e.event, Event::Other(m)
                if m["event"] == "import_skipped" && m["topic"] == topic.as_str()
                    && m["reason"].as_str().unwrap().contains(word))),
            "{name}: {topic} not in the events: {events:?}"
        );
    }
    common::assert_upstream_reads_same(&out);
}

#[test]
fn imports_mcap_written_by_mcap_ros2_support() {
    let bags = write_bags();
    check_import(&bags, "ros2.mcap", false);
    check_import(&bags, "ros2.mcap", true);
}

/// Many small chunks: every value as before, and each chunk decompressed about once for the
/// whole import (samples are read in time order over all topics), not once per topic.
#[test]
fn small_chunks_are_decompressed_about_once() {
    use roverlog_ros::{self as ros, RosOptions, RosSource};
    let bags = write_bags();
    check_import(&bags, "ros2_small_chunks.mcap", false);
    let mut src = RosSource::open(
        &bags.dir.join("ros2_small_chunks.mcap"),
        RosOptions::default(),
    )
    .unwrap();
    ros::import(
        &mut src,
        &bags.dir.join("out-chunk-reads"),
        "test",
        0,
        |_, _| {},
    )
    .unwrap();
    let (chunks, reads) = src.chunk_reads();
    assert!(chunks >= 10, "only {chunks} chunks: the test needs many");
    assert!(
        reads <= chunks + chunks / 4,
        "{reads} decompressions of {chunks} chunks"
    );
}

#[test]
fn imports_rosbag2_mcap_directory_written_by_rosbags() {
    let bags = write_bags();
    check_import(&bags, "rosbag2", false);
}

#[test]
fn imports_rosbag2_sqlite3_directory_written_by_rosbags() {
    let bags = write_bags();
    check_import(&bags, "rosbag2_sqlite", false);
    check_import(&bags, "rosbag2_sqlite", true);
}

/// rosbag2 before Iron stored no message definitions in its sqlite3 storage: the standard
/// types decode with the definitions roverlog ships, value by value as from the database
/// that stores them; a topic of another type (`geometry_msgs/PoseStamped`, `std_msgs/String`)
/// is reported as skipped for want of its definition.
#[test]
fn imports_pre_iron_sqlite3_with_the_shipped_standard_definitions() {
    let bags = write_bags();
    check_import_as(&bags, "rosbag2_sqlite_humble", false, true);
    check_import_as(&bags, "rosbag2_sqlite_humble", true, true);
}

#[test]
fn imports_ros1_bag_written_by_rosbags() {
    let bags = write_bags();
    check_import(&bags, "ros1.bag", false);
    check_import(&bags, "ros1.bag", true);
}

#[test]
fn imports_mcap_with_ros1_messages_and_lz4_chunks() {
    let bags = write_bags();
    check_import(&bags, "ros1.mcap", false);
}

#[test]
fn imports_ros1_noetic_bag_with_header_seq_and_lz4() {
    let bags = write_bags();
    check_import(&bags, "ros1_noetic.bag", false);
}

#[test]
fn jpeg_images_as_mjpg_video() {
    let bags = write_bags();
    let out = bags.dir.join("out-mjpg");
    let r = import(
        &bags.dir.join("ros2.mcap"),
        &out,
        &["--images", "mjpg", "--topics", "/camera/compressed"],
    );
    assert!(r.ok(), "{}", r.text());
    let trace = Trace::open(&out).unwrap();
    assert_eq!(trace.sensor_names(), ["camera_compressed"]);
    let s = trace.sensor("camera_compressed").unwrap();
    let meta = s.meta().get("video.avi").unwrap().clone();
    assert_eq!(meta.shape, [16, 24, 3]);
    let files = bags.expected["topics"]["/camera/compressed"]["blob"]["files"]
        .as_array()
        .unwrap();
    let mut v = s.channel("video.avi").unwrap();
    assert_eq!(v.len().unwrap(), files.len() as u64);
    for (k, f) in files.iter().enumerate() {
        let want = base64::engine::general_purpose::STANDARD
            .decode(f.as_str().unwrap())
            .unwrap();
        // AVI chunks are padded to even sizes.
        let got = v.get(k as u64).unwrap();
        assert_eq!(&got[..want.len()], &want[..], "frame {k}");
    }
}

/// Every cut of a recording, and damaged bytes, give exit code 2 and a message naming the
/// file and what is wrong; never a panic, never a partial trace passed off as whole.
#[test]
fn truncated_and_corrupt_recordings_are_clear_errors() {
    let bags = write_bags();
    for name in ["ros2.mcap", "ros1.bag", "rosbag2/rosbag2.mcap"] {
        let whole = std::fs::read(bags.dir.join(name)).unwrap();
        let bad = bags.dir.join("bad").join(name.replace('/', "_"));
        std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
        let cuts = [whole.len() / 3, whole.len() / 2, whole.len() - 40, 20];
        for (k, &cut) in cuts.iter().enumerate() {
            std::fs::write(&bad, &whole[..cut]).unwrap();
            let out = bags.dir.join(format!("out-cut-{k}"));
            let _ = std::fs::remove_dir_all(&out);
            let r = import(&bad, &out, &[]);
            assert_eq!(r.code, 2, "{name} cut at {cut}: {}", r.text());
            assert!(
                r.stderr.contains(&*bad.to_string_lossy()),
                "{name} cut at {cut}: {}",
                r.stderr
            );
            assert!(
                r.stderr.contains("truncated")
                    || r.stderr.contains("past")
                    || r.stderr.contains("needs"),
                "{name} cut at {cut}: {}",
                r.stderr
            );
            assert!(!out.exists(), "{name} cut at {cut}: a trace was written");
        }
        // Damage inside the first chunk's compressed bytes.
        let mut damaged = whole.clone();
        let at = whole.len() / 3;
        for b in &mut damaged[at..at + 16] {
            *b ^= 0x5a;
        }
        std::fs::write(&bad, &damaged).unwrap();
        let out = bags.dir.join("out-damaged");
        let r = import(&bad, &out, &[]);
        if name.starts_with("rosbag2/") {
            // rosbags writes chunks uncompressed and without a CRC: nothing tells damaged
            // bytes from good ones but the message that no longer decodes, whose topic must
            // be reported (one more than the three the recording has anyway).
            assert!(r.ok(), "{name} damaged: {}", r.text());
            assert!(
                r.out().contains("4 topic(s) not imported"),
                "{name} damaged: {}",
                r.out()
            );
        } else {
            assert_eq!(r.code, 2, "{name} damaged: {}", r.text());
            assert!(
                r.stderr.contains(&*bad.to_string_lossy()),
                "{name} damaged: {}",
                r.stderr
            );
            assert!(
                r.stderr.contains("chunk at byte"),
                "{name} damaged: {}",
                r.stderr
            );
        }
    }
    // A database cut short: SQLite says so, with the file's name.
    let db = std::fs::read_dir(bags.dir.join("rosbag2_sqlite"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "db3"))
        .expect("a .db3 file");
    let whole = std::fs::read(&db).unwrap();
    let bad_dir = bags.dir.join("bad_sqlite");
    std::fs::create_dir_all(&bad_dir).unwrap();
    std::fs::copy(
        bags.dir.join("rosbag2_sqlite/metadata.yaml"),
        bad_dir.join("metadata.yaml"),
    )
    .unwrap();
    let bad_db = bad_dir.join(db.file_name().unwrap());
    std::fs::write(&bad_db, &whole[..whole.len() / 2]).unwrap();
    let r = import(&bad_dir, &bags.dir.join("out-bad-sqlite"), &[]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(
        r.stderr.contains(&*bad_db.to_string_lossy()) && r.stderr.contains("sqlite"),
        "{}",
        r.stderr
    );
    // Not a recording at all.
    let junk = bags.dir.join("junk.mcap");
    std::fs::write(&junk, b"\x89MCAP0\r\nnot really").unwrap();
    let r = import(&junk, &bags.dir.join("out-junk"), &[]);
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(
        r.stderr.contains("junk.mcap") && r.stderr.contains("over the limit"),
        "{}",
        r.stderr
    );
}

/// `replay` takes the same recordings: pushed into a real daemon, every sensor comes back with
/// the timestamps and samples `import` writes.
#[test]
fn replay_into_a_daemon_gives_what_import_gives() {
    let bags = write_bags();
    let src = bags.dir.join("ros2.mcap");
    let imported = bags.dir.join("out-for-replay");
    let r = import(&src, &imported, &[]);
    assert!(r.ok(), "{}", r.text());
    let r = replay_gives_what_import_gives(&src, &imported, &[]);
    // Every imported topic's 5 messages; the skipped ones are said on stderr.
    let sent = 5 * bags.expected["topics"].as_object().unwrap().len();
    assert!(
        r.out().contains(&format!("sent {sent} samples")),
        "{}",
        r.text()
    );
    for topic in ["/changes_shape", "/chatter", "/camera/png"] {
        assert!(
            r.stderr.contains(&format!("skipped topic {topic} ")),
            "{}",
            r.stderr
        );
    }
}

/// Replays `src` into a fresh daemon at full speed (with `env` set), stops it, and requires
/// the trace it recorded to hold the samples of `imported` (`src` imported before). Returns
/// the replay's run, for what it said.
pub(crate) fn replay_gives_what_import_gives(
    src: &Path,
    imported: &Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> common::Run {
    use crate::support::daemon::TestDaemon;
    let mut d = TestDaemon::start(serde_json::json!({"receive_timestamps": false}));
    let sock = d.ingest_path();
    let r = common::roverlog_env(
        &[
            "replay".as_ref(),
            src.as_os_str(),
            "--socket".as_ref(),
            sock.as_os_str(),
            "--max-speed".as_ref(),
        ],
        env,
    );
    assert!(r.ok(), "replay {}: {}", src.display(), r.text());
    let recorded = d.trace_dir();
    assert!(d.stop().success(), "{}", d.log());
    assert_same_samples(imported, &recorded);
    r
}

/// The traces `a` and `b` have the same sensors, timestamps and samples.
pub(crate) fn assert_same_samples(a: &Path, b: &Path) {
    let (a, b) = (Trace::open(a).unwrap(), Trace::open(b).unwrap());
    assert_eq!(a.sensor_names(), b.sensor_names());
    for name in a.sensor_names() {
        let (sa, sb) = (a.sensor(name).unwrap(), b.sensor(name).unwrap());
        assert_eq!(
            sa.timestamps().unwrap(),
            sb.timestamps().unwrap(),
            "{name}: ts"
        );
        let n = sa.len().unwrap();
        for (ch, _) in sa.meta().data_channels() {
            let (mut ra, mut rb) = (sa.channel(ch).unwrap(), sb.channel(ch).unwrap());
            for k in 0..n {
                assert_eq!(
                    *ra.get(k).unwrap(),
                    *rb.get(k).unwrap(),
                    "{name}/{ch} sample {k}"
                );
            }
        }
    }
}

/// The mapping file: a topic left out (and listed as such), sensors and channels named, a
/// topic's own --stamp and --images; a rule for a topic the recording lacks is an error.
#[test]
fn mapping_file_names_sensors_and_channels_and_leaves_topics_out() {
    let bags = write_bags();
    let map = bags.dir.join("map.json");
    std::fs::write(
        &map,
        serde_json::to_vec(&serde_json::json!({
            "/imu": {"sensor": "imu0", "stamp": "log"},
            "/camera/compressed": {"sensor": "camera", "images": "mjpg"},
            "/points": {"channels": {"intensity": "rfl"}},
            "/scan": "skip",
        }))
        .unwrap(),
    )
    .unwrap();
    let out = bags.dir.join("out-map");
    let r = import(
        &bags.dir.join("ros2.mcap"),
        &out,
        &["--map", map.to_str().unwrap()],
    );
    assert!(r.ok(), "{}", r.text());
    let trace = Trace::open(&out).unwrap();
    let names = trace.sensor_names();
    assert!(
        names.contains(&"imu0") && names.contains(&"camera") && !names.contains(&"scan"),
        "{names:?}"
    );
    let topics = &bags.expected["topics"];
    let want_log: Vec<f64> = topics["/imu"]["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let ts = trace.sensor("imu0").unwrap().timestamps().unwrap();
    assert!(
        ts.iter().zip(&want_log).all(|(a, b)| (a - b).abs() < 1e-6),
        "{ts:?} vs {want_log:?}"
    );
    assert!(trace
        .sensor("camera")
        .unwrap()
        .meta()
        .get("video.avi")
        .is_some());
    let points = trace.sensor("points").unwrap();
    assert!(points.meta().get("rfl").is_some() && points.meta().get("intensity").is_none());
    assert!(
        r.out()
            .lines()
            .any(|l| l.contains("/scan") && l.contains("left out by the mapping file")),
        "{}",
        r.out()
    );
    // A rule for a topic the recording does not have.
    std::fs::write(&map, br#"{"/imu/data": {"sensor": "imu"}}"#).unwrap();
    let r = import(
        &bags.dir.join("ros2.mcap"),
        &bags.dir.join("out-map2"),
        &["--map", map.to_str().unwrap()],
    );
    assert_eq!(r.code, 2, "{}", r.text());
    assert!(
        r.stderr.contains("/imu/data") && r.stderr.contains("no such topic"),
        "{}",
        r.stderr
    );
}
