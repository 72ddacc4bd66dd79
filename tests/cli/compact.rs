//! `roverlog compact` killed at any point (kill -9 of the real process) leaves a trace that
//! reads the same as before, with every sensor once; the next run finishes the job.

use crate::support::common::{roverlog, roverlog_bin};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use roverlog_bench::lidar::lidar_frame;
use roverlog_core::format::lzmaf::compact::stored_frames;
use roverlog_core::format::{
    lzma, stored_xz, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, Trace,
    WriterOptions,
};

const ROWS: usize = 32;
const COLS: usize = 256;
const FRAMES: u64 = 80;

/// A trace with a lidar (`rfl` u1, `rng` u2, `lzmaf`) whose frames are all stored
/// uncompressed but every fifth, and an `imu` (`raw`) that compact does not touch.
fn trace(root: &Path) -> PathBuf {
    let t = root.join("t");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(t.join("config.yaml"), "{}").unwrap();
    let lz = |ty, shape: &[usize]| ChannelMeta::new(ChannelFormat::Lzmaf, ty, shape.to_vec(), "");
    let meta = SensorMeta {
        channels: vec![
            ("rfl".into(), lz(DType::U1, &[ROWS, COLS])),
            ("rng".into(), lz(DType::U2, &[ROWS, COLS])),
        ],
    };
    let mut w = SensorWriter::create(&t.join("lidar"), meta, &WriterOptions::default()).unwrap();
    for i in 0..FRAMES {
        let f = lidar_frame(ROWS, COLS, i);
        let enc = |d: &[u8]| {
            if i % 5 == 0 {
                lzma::compress(d, 0)
            } else {
                stored_xz::store(d)
            }
        };
        w.append_encoded(i as f64 * 0.1, &[&enc(&f.rfl), &enc(&f.rng)])
            .unwrap();
    }
    w.finish().unwrap();
    let imu = SensorMeta {
        channels: vec![(
            "acc".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], ""),
        )],
    };
    let mut w = SensorWriter::create(&t.join("imu"), imu, &WriterOptions::default()).unwrap();
    for i in 0..100u32 {
        w.append(f64::from(i) * 0.01, &[&[i as u8; 12]]).unwrap();
    }
    w.finish().unwrap();
    t
}

/// Every sensor's every channel, decoded.
fn read_all(trace: &Path) -> Vec<(String, String, Vec<Vec<u8>>)> {
    let t = Trace::open(trace).unwrap();
    assert_eq!(t.all_sensor_names(), ["imu", "lidar"], "every sensor once");
    let mut out = Vec::new();
    for s in t.sensors().unwrap() {
        for (ch, _) in &s.meta().channels {
            let mut r = s.channel(ch).unwrap();
            let frames = (0..r.len().unwrap())
                .map(|i| r.get(i).unwrap().into_owned())
                .collect();
            out.push((s.name().to_string(), ch.clone(), frames));
        }
    }
    out
}

fn stored(trace: &Path) -> u64 {
    stored_frames(&trace.join("lidar"))
        .unwrap()
        .iter()
        .map(|c| c.stored)
        .sum()
}

#[test]
fn compact_killed_at_any_point_leaves_a_readable_trace_and_the_next_run_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let before = read_all(&t);
    assert_eq!(stored(&t), 2 * (FRAMES - FRAMES / 5));
    // Kill points spread over the run (it recompresses 128 frames on one thread).
    for ms in [5, 40, 120, 300, 700] {
        let mut child = Command::new(roverlog_bin())
            .args(["compact", "--threads", "1"])
            .arg(&t)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        let _ = child.kill();
        child.wait().unwrap();
        assert!(
            read_all(&t) == before,
            "after a kill at {ms} ms: the trace reads differently"
        );
        let check = roverlog(&[Path::new("validate"), &t]);
        assert!(check.ok(), "after a kill at {ms} ms: {}", check.text());
    }
    let run = roverlog(&[Path::new("compact"), &t]);
    assert!(run.ok(), "{}", run.text());
    assert!(
        run.out().contains("lidar/rng: ") || stored(&t) == 0,
        "{}",
        run.text()
    );
    assert_eq!(stored(&t), 0, "every stored frame recompressed");
    assert!(
        read_all(&t) == before,
        "compact changed what the trace reads"
    );
    assert!(
        !t.join("_roverlog/compact").exists()
            || std::fs::read_dir(t.join("_roverlog/compact"))
                .unwrap()
                .next()
                .is_none(),
        "staging left behind"
    );
}
