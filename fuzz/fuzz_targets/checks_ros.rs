//! The ROS targets' bodies, as plain functions over bytes (as `checks.rs` for the others):
//! `fuzz_targets/<name>.rs` calls them under libFuzzer, and `crates/ros/tests/fuzz_corpus.rs`
//! runs them over the committed seeds in `fuzz/corpus-seeds/<name>/`. `ros_cdr` is one message
//! against a schema; `rosbag2_meta` a `metadata.yaml` or a zstd frame.
//!
//! The recording targets (`ros_mcap`, `ros1_bag`, `rosbag2_dir`) each open the input the way `roverlog import`/`replay` do ([`RosSource::open`], which
//! sniffs the container from the magic, scans every record, decodes and maps every message
//! against the schema stored with its topic) and then reads every sample back as the import
//! does. Invariants: no panic; an error is [`Error::Ros`] (or I/O) and says something; every
//! accepted sample reads back with its channels' declared sizes; opening the same bytes twice
//! gives the same sensors, skipped topics, timestamps and samples. Allocations are bounded by
//! libFuzzer's `-malloc_limit_mb` (default: the RSS limit): a declared length past the
//! bytes left must be refused before anything of that size is allocated.

#![allow(dead_code)] // each fuzz binary uses one of these

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use roverlog_core::format::{ChannelFormat, SensorMeta};
use roverlog_core::replay::Source;
use roverlog_ros::error::Error;
use roverlog_ros::wire::decode::Limits;
use roverlog_ros::{RosOptions, RosSource, SkippedTopic};

/// Message limits small enough that the fuzzer reaches them (the defaults are 1 MiB).
const LIMITS: Limits = Limits {
    max_string: 4096,
    max_elements: 4096,
    max_depth: 8,
};

/// A directory of its own under the temp dir, removed when dropped (the readers take paths;
/// one per call, so the tests' threads never share one).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "roverlog-fuzz-ros-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).expect("writing the input");
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What opening a recording gave: every sensor, and the topics left out.
#[derive(Debug, PartialEq)]
struct Opened {
    sensors: Vec<Sensor>,
    skipped: Vec<SkippedTopic>,
}

/// A sensor as read: its name, channels, timestamps (as bits) and every sample's buffers.
#[derive(Debug, PartialEq)]
struct Sensor {
    name: String,
    meta: SensorMeta,
    ts: Vec<u64>,
    samples: Vec<Vec<Vec<u8>>>,
}

fn check_error(e: &Error) -> String {
    assert!(
        matches!(
            e,
            Error::Ros { .. } | Error::Core(roverlog_core::Error::Io { .. })
        ),
        "not a recording error: {e:?}"
    );
    let text = e.to_string();
    assert!(!text.trim().is_empty(), "an error without a message: {e:?}");
    text
}

/// Opens `path` like `import` and reads every sample; `Err` is the error's text.
fn open(path: &Path) -> Result<Opened, String> {
    let opts = RosOptions {
        limits: Some(LIMITS),
        ..RosOptions::default()
    };
    let mut src = RosSource::open(path, opts).map_err(|e| check_error(&e))?;
    let skipped = src.skipped();
    let mut sensors = Vec::new();
    for i in 0..src.sensors().len() {
        let meta = src.sensors()[i].meta.clone();
        let ts = src.timestamps(i).expect("timestamps of a sensor");
        assert!(!ts.is_empty(), "sensor {i} without samples");
        assert!(
            ts.windows(2).all(|w| w[0] <= w[1]),
            "timestamps out of order"
        );
        let mut samples = Vec::new();
        let mut out = Vec::new();
        for k in 0..ts.len() as u64 {
            // It decoded and mapped when the recording was scanned: it must read back.
            src.read(i, k, &mut out)
                .unwrap_or_else(|e| panic!("sensor {i} sample {k} does not read back: {e}"));
            let channels: Vec<_> = meta.data_channels().collect();
            assert_eq!(channels.len(), out.len(), "buffers per sample");
            for ((name, ch), buf) in channels.iter().zip(&out) {
                if ch.format == ChannelFormat::Raw {
                    assert_eq!(buf.len(), ch.sample_bytes(), "channel {name}'s sample size");
                } else {
                    assert!(!buf.is_empty(), "channel {name}: an empty frame");
                }
            }
            samples.push(out.clone());
        }
        let name = src.sensors()[i].name.clone();
        sensors.push(Sensor {
            name,
            meta,
            ts: ts.iter().map(|t| t.to_bits()).collect(),
            samples,
        });
    }
    Ok(Opened { sensors, skipped })
}

/// Writes `data` as `name` in a scratch directory and opens it twice.
fn recording(data: &[u8], name: &str) {
    let dir = Scratch::new();
    let path = dir.write(name, data);
    let first = open(&path);
    let again = open(&path);
    assert_eq!(first, again, "the same recording opens differently twice");
}

/// `ros_mcap`: the input as an `.mcap` file (seeds from `fuzz/ros_container_seeds.py`:
/// ROS 2 and ROS 1 messages, zstd/lz4/uncompressed chunks, unchunked, damaged copies).
pub fn ros_mcap(data: &[u8]) {
    recording(data, "input.mcap");
}

/// `ros1_bag`: the input as a ROS 1 `.bag` (bz2/lz4/uncompressed chunks, unindexed bags).
pub fn ros1_bag(data: &[u8]) {
    recording(data, "input.bag");
}

/// The MCAP file `rosbag2_dir` puts beside the metadata (what rosbags' rosbag2 writer
/// stores, one IMU message).
const ROSBAG2_DATA: &[u8] = include_bytes!("../corpus-seeds/ros_mcap/rosbag2-data.mcap");

/// `rosbag2_dir`: the input as a rosbag2 directory's `metadata.yaml`, beside one MCAP file
/// `data.mcap` and a subdirectory `sub/`. Whatever files it lists must be inside the
/// directory and be files; then the directory opens like any recording (the invariants of
/// [`ros_mcap`]).
pub fn rosbag2_dir(data: &[u8]) {
    let dir = Scratch::new();
    dir.write("metadata.yaml", data);
    dir.write("data.mcap", ROSBAG2_DATA);
    std::fs::create_dir_all(dir.0.join("sub")).expect("a subdirectory");
    match roverlog_ros::rosbag2::open(&dir.0) {
        Ok(bag) => {
            assert!(!bag.files.is_empty(), "a rosbag2 directory without files");
            for f in &bag.files {
                assert!(f.starts_with(&dir.0), "{} is outside", f.display());
                assert!(f.is_file(), "{} is not a file", f.display());
            }
        }
        Err(e) => {
            check_error(&e);
        }
    }
    let first = open(&dir.0);
    assert_eq!(
        first,
        open(&dir.0),
        "the same directory opens differently twice"
    );
}

/// How many sensors (topics imported) `data` opens with as the input of `target` (`Err`: the
/// error's text), so the seeds' test can check the good ones reach the messages and the
/// damaged ones are refused.
pub fn ros_recording_sensors(target: &str, data: &[u8]) -> Result<usize, String> {
    let dir = Scratch::new();
    let path = match target {
        "ros_mcap" => dir.write("input.mcap", data),
        "ros1_bag" => dir.write("input.bag", data),
        "rosbag2_dir" => {
            dir.write("metadata.yaml", data);
            dir.write("data.mcap", ROSBAG2_DATA);
            dir.0.clone()
        }
        other => panic!("no ROS target {other}"),
    };
    open(&path).map(|o| o.sensors.len())
}

/// The ROS 2 (`.msg`) and ROS 1 (`.ros1.msg`) definitions `ros_cdr` decodes against, by
/// `fuzz/ros_cdr_seeds.py`.
const ROS_SCHEMAS: [(&str, &str, &str); 7] = [
    (
        "sensor_msgs/msg/Imu",
        include_str!("ros_schemas/Imu.msg"),
        include_str!("ros_schemas/Imu.ros1.msg"),
    ),
    (
        "sensor_msgs/msg/Image",
        include_str!("ros_schemas/Image.msg"),
        include_str!("ros_schemas/Image.ros1.msg"),
    ),
    (
        "sensor_msgs/msg/PointCloud2",
        include_str!("ros_schemas/PointCloud2.msg"),
        include_str!("ros_schemas/PointCloud2.ros1.msg"),
    ),
    (
        "sensor_msgs/msg/LaserScan",
        include_str!("ros_schemas/LaserScan.msg"),
        include_str!("ros_schemas/LaserScan.ros1.msg"),
    ),
    (
        "sensor_msgs/msg/NavSatFix",
        include_str!("ros_schemas/NavSatFix.msg"),
        include_str!("ros_schemas/NavSatFix.ros1.msg"),
    ),
    (
        "sensor_msgs/msg/CompressedImage",
        include_str!("ros_schemas/CompressedImage.msg"),
        include_str!("ros_schemas/CompressedImage.ros1.msg"),
    ),
    (
        "geometry_msgs/msg/PoseStamped",
        include_str!("ros_schemas/PoseStamped.msg"),
        include_str!("ros_schemas/PoseStamped.ros1.msg"),
    ),
];

/// `ros_cdr`: byte 0 picks the wire (bit 0: CDR or ROS 1) and the schema (bits 1-3: 0 = the
/// schema text is in the input up to a NUL, else one of [`ROS_SCHEMAS`]); the rest is one
/// message. Schema parsing and decoding never panic; what decodes lies within the message,
/// decodes the same again, and maps to channels whose raw samples are exactly their type
/// and shape's size.
pub fn ros_cdr(data: &[u8]) {
    let _ = ros_cdr_channels(data);
}

/// The body of `ros_cdr`: how many channels the message mapped to (`None`: it did not parse,
/// decode or map), so the seeds' test can check they reach the mapping.
pub fn ros_cdr_channels(data: &[u8]) -> Option<usize> {
    use roverlog_core::format::ChannelFormat;
    use roverlog_ros::import::mapping::{map, ImageFormat};
    use roverlog_ros::typesys::schema::{normalize_type, Dialect, Schema};
    use roverlog_ros::wire::decode::{decode, decode_detect, Limits, Value, Wire};
    let (&sel, rest) = data.split_first()?;
    let (wire, dialect) = if sel & 1 == 0 {
        (Wire::Cdr, Dialect::Ros2)
    } else {
        (Wire::Ros1, Dialect::Ros1)
    };
    let (name, text, msg) = match usize::from(sel >> 1) % 8 {
        0 => {
            let nul = rest.iter().position(|&b| b == 0)?;
            (
                "fuzz/msg/Msg",
                String::from_utf8_lossy(&rest[..nul]).into_owned(),
                &rest[nul + 1..],
            )
        }
        k => {
            let (n, ros2, ros1) = ROS_SCHEMAS[k - 1];
            (
                n,
                if wire == Wire::Cdr { ros2 } else { ros1 }.to_string(),
                rest,
            )
        }
    };
    let schema = Schema::parse(name, &text, dialect).ok()?;
    let limits = Limits {
        max_string: 4096,
        max_elements: 4096,
        max_depth: 8,
    };
    let (v, wide) = decode_detect(&schema, msg, wire, &limits).ok()?;
    fn within(v: &Value, msg: &[u8]) {
        let range = msg.as_ptr_range();
        let inside = |b: &[u8]| {
            b.is_empty() || (range.start <= b.as_ptr() && b.as_ptr_range().end <= range.end)
        };
        match v {
            Value::Prims {
                prim, bytes, array, ..
            } => {
                assert!(inside(bytes), "numbers outside the message");
                assert_eq!(bytes.len() % prim.size(), 0);
                assert!(*array || bytes.len() == prim.size());
            }
            Value::Str(b) => assert!(inside(b), "a string outside the message"),
            Value::WStr {
                wide,
                big_endian,
                bytes,
            } => {
                assert!(inside(bytes), "a wide string outside the message");
                assert_eq!(bytes.len() % wide.size(), 0);
                let mut chars = roverlog_ros::wire::wide::Chars::new(bytes, *wide, *big_endian);
                assert!(chars.all(|c| c.is_ok()), "a wide string that is not text");
            }
            Value::List(items) => items.iter().for_each(|i| within(i, msg)),
            Value::Msg(fields) => fields.iter().for_each(|(_, f)| within(f, msg)),
        }
    }
    within(&v, msg);
    assert_eq!(
        decode_detect(&schema, msg, wire, &limits).unwrap(),
        (v.clone(), wide),
        "decodes differently twice"
    );
    if let Some(w) = wide {
        // The form found decodes the message by itself, to the same value.
        assert_eq!(decode(&schema, msg, wire, w, &limits).unwrap(), v);
    }
    let m = map(&normalize_type(name), &v, ImageFormat::Jpg).ok()?;
    {
        assert_eq!(m.channels.len(), m.data.len());
        for ((ch, meta), bytes) in m.channels.iter().zip(&m.data) {
            if meta.format == ChannelFormat::Raw {
                let want = meta.shape.iter().product::<usize>() * meta.dtype.itemsize();
                assert_eq!(
                    bytes.len(),
                    want,
                    "channel {ch}: {:?} {:?}",
                    meta.dtype,
                    meta.shape
                );
            } else {
                assert!(!bytes.is_empty(), "channel {ch}: an empty image");
            }
        }
    }
    Some(m.channels.len())
}

/// `rosbag2_meta`: byte 0 even: the rest is a rosbag2 `metadata.yaml`
/// (`roverlog_ros::rosbag2::parse`): never panics; what parses, written back out (every value quoted,
/// each key once) parses to the same keys; a compression it accepts is zstd. Byte 0 odd: the
/// rest is one message of a `compression_mode: message` bag through `FrameDecoder` with a
/// 64 KiB limit: never more than the limit out, and the same outcome twice with one reused
/// zstd context.
pub fn rosbag2_meta(data: &[u8]) {
    use roverlog_ros::rosbag2::zstd::FrameDecoder;
    use roverlog_ros::rosbag2::{parse, Compression};
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel & 1 == 1 {
        const LIMIT: u64 = 64 << 10;
        let mut d = FrameDecoder::new(LIMIT);
        let first = d.decompress(rest).map(<[u8]>::to_vec);
        if let Ok(out) = &first {
            assert!(out.len() as u64 <= LIMIT, "{} bytes out", out.len());
        }
        let again = d.decompress(rest).map(<[u8]>::to_vec);
        assert_eq!(first, again, "a reused context decodes differently");
        return;
    }
    let text = String::from_utf8_lossy(rest);
    let Ok(m) = parse(&text) else {
        return;
    };
    if let Ok(c) = m.compression() {
        if c != Compression::None {
            assert!(m.compression_format.eq_ignore_ascii_case("zstd"), "{m:?}");
        }
    }
    let mut out = format!(
        "rosbag2_bagfile_information:\n  storage_identifier: \"{}\"\n  compression_format: \"{}\"\n  compression_mode: \"{}\"\n  relative_file_paths:\n",
        m.storage_identifier, m.compression_format, m.compression_mode
    );
    for f in &m.relative_file_paths {
        out.push_str(&format!("  - \"{f}\"\n"));
    }
    assert_eq!(parse(&out).as_ref(), Ok(&m), "written back:\n{out}");
}
