//! Compacting a sensor: stored frames become compressed, everything reads the same, and an
//! interrupted run leaves a readable sensor.

use super::*;
use crate::format::{ChannelMeta, DType, SensorWriter, Trace, WriterOptions};

const N: u64 = 12;

/// Sample `i` of channel `c`: smooth enough to compress.
fn sample(c: usize, i: u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|k| ((k / 37) as u64 * 3 + i + c as u64) as u8)
        .collect()
}

/// A trace with sensor `lidar`: `lzmaf` channels `a` (u1 [4000]) and `b` (u2 [3000]), a
/// `raw` channel `r`; every third sample's `lzmaf` frames stored uncompressed.
fn trace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    fs::create_dir(&trace).unwrap();
    let meta = SensorMeta {
        channels: vec![
            (
                "a".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U1, vec![4000], ""),
            ),
            (
                "b".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::U2, vec![3000], ""),
            ),
            (
                "r".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![16], ""),
            ),
        ],
    };
    let mut w =
        SensorWriter::create(&trace.join("lidar"), meta, &WriterOptions::default()).unwrap();
    for i in 0..N {
        let (a, b, r) = (sample(0, i, 4000), sample(1, i, 6000), sample(2, i, 16));
        let enc = |d: &[u8]| {
            if i % 3 == 0 {
                stored_xz::store(d)
            } else {
                lzma::compress(d, 0)
            }
        };
        let (ea, eb) = (enc(&a), enc(&b));
        w.append_encoded(i as f64, &[&ea, &eb, &r]).unwrap();
    }
    w.finish().unwrap();
    (dir, trace)
}

fn read_all(trace: &Path) -> Vec<Vec<Vec<u8>>> {
    let t = Trace::open(trace).unwrap();
    let s = t.sensor("lidar").unwrap();
    ["ts", "a", "b", "r"]
        .iter()
        .map(|c| {
            let mut r = s.channel(c).unwrap();
            (0..r.len().unwrap())
                .map(|i| r.get(i).unwrap().into_owned())
                .collect()
        })
        .collect()
}

#[test]
fn stored_frames_are_recompressed_and_read_the_same() {
    let (_d, trace) = trace();
    let before = read_all(&trace);
    let counts = stored_frames(&trace.join("lidar")).unwrap();
    assert_eq!(
        counts
            .iter()
            .map(|c| (c.channel.as_str(), c.frames, c.stored))
            .collect::<Vec<_>>(),
        [("a", N, 4), ("b", N, 4)]
    );
    let mut seen = Vec::new();
    let done = compact_sensor(&trace, "lidar", 0, 2, &mut |n| seen.push(n)).unwrap();
    assert_eq!(
        done.iter().map(|c| c.recompressed).collect::<Vec<_>>(),
        [4, 4]
    );
    assert!(
        done.iter().all(|c| c.bytes_after < c.bytes_before),
        "{done:?}"
    );
    assert_eq!(
        seen.last(),
        Some(&(2 * N)),
        "progress over both channels: {seen:?}"
    );
    assert_eq!(read_all(&trace), before);
    assert!(stored_frames(&trace.join("lidar"))
        .unwrap()
        .iter()
        .all(|c| c.stored == 0));
    assert!(
        !staging_dir(&trace, "lidar").exists(),
        "the old files are gone"
    );
    let check =
        crate::format::check_sensor(&trace.join("lidar"), crate::format::Depth::Deep).unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
    // Nothing left to do: nothing is written.
    let again = compact_sensor(&trace, "lidar", 0, 2, &mut |_| {}).unwrap();
    assert!(again
        .iter()
        .all(|c| c.recompressed == 0 && c.bytes_after == c.bytes_before));
}

/// A run interrupted before the exchange leaves a partial staging copy; one interrupted
/// after it leaves the old files there. Either way the sensor reads whole, the staging place
/// is not a sensor, and the next run finishes the job.
#[test]
fn an_interrupted_run_leaves_a_readable_sensor_and_the_next_run_finishes() {
    let (_d, trace) = trace();
    let before = read_all(&trace);
    let staging = staging_dir(&trace, "lidar");
    // Before the exchange: part of a copy.
    fs::create_dir_all(&staging).unwrap();
    fs::hard_link(trace.join("lidar/meta.json"), staging.join("meta.json")).unwrap();
    fs::write(staging.join("a"), b"\xfd7zXZ\0 half a frame").unwrap();
    assert_eq!(read_all(&trace), before);
    assert_eq!(Trace::open(&trace).unwrap().sensor_names(), ["lidar"]);
    // Keep the old files, as the exchange would leave them in the staging place.
    let old = trace.parent().unwrap().join("old");
    fs::create_dir(&old).unwrap();
    link_tree(&trace.join("lidar"), &old, &[]).unwrap();
    compact_sensor(&trace, "lidar", 0, 1, &mut |_| {}).unwrap();
    assert_eq!(read_all(&trace), before);
    assert!(!staging.exists());
    // After the exchange, before the removal: the old files (meta.json included) sit in the
    // staging place. The sensor is its new self, and nothing else is taken for a sensor.
    fs::rename(&old, &staging).unwrap();
    assert_eq!(read_all(&trace), before);
    assert_eq!(Trace::open(&trace).unwrap().all_sensor_names(), ["lidar"]);
    assert!(stored_frames(&trace.join("lidar"))
        .unwrap()
        .iter()
        .all(|c| c.stored == 0));
    compact_sensor(&trace, "lidar", 0, 1, &mut |_| {}).unwrap();
    assert!(!staging.exists(), "the next run clears the leftover");
    assert_eq!(read_all(&trace), before);
}
