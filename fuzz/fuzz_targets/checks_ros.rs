//! The ROS recording targets' bodies (`ros_mcap`, `ros1_bag`, `rosbag2_dir`), beside
//! `checks.rs` (which re-exports them) so that file stays one screenful per parser family.
//!
//! Each opens the input the way `roverlog import`/`replay` do ([`RosSource::open`], which
//! sniffs the container from the magic, scans every record, decodes and maps every message
//! against the schema stored with its topic) and then reads every sample back as the import
//! does. Invariants: no panic; an error is [`Error::Ros`] (or I/O) and says something; every
//! accepted sample reads back with its channels' declared sizes; opening the same bytes twice
//! gives the same sensors, skipped topics, timestamps and samples. Allocations are bounded by
//! libFuzzer's `-malloc_limit_mb` (default: the RSS limit): a declared length past the
//! bytes left must be refused before anything of that size is allocated.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use roverlog_core::error::Error;
use roverlog_core::format::{ChannelFormat, SensorMeta};
use roverlog_core::replay::Source;
use roverlog_core::ros::decode::Limits;
use roverlog_core::ros::{RosOptions, RosSource, SkippedTopic};

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
        matches!(e, Error::Ros { .. } | Error::Io { .. }),
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
    match roverlog_core::ros::rosbag2::open(&dir.0) {
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
