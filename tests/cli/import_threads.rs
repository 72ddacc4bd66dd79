//! `roverlog import` reads its source in order on one thread and decodes (and compresses) on
//! `--threads` others (issue 35): the trace it writes is the same byte for byte with one
//! thread or many, for every kind of source (a roverd trace with `lzmaf`, raw and jpg
//! channels, the L5Kit and gulp fixtures, a ROS 1 bag and an MCAP rosbag2 directory with point
//! clouds and IMU, written by `roverlog rosbag`). The memory bound and the order under a
//! tiny bound are `roverlog_core::parallel::pipeline`'s own tests.

use crate::support::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

/// Every file below `dir`, relative path -> bytes, but the events log (it holds the time of
/// the import).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.ends_with("_roverlog/events.jsonl") {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Imports `src` with 1, 2 and 5 threads (into `work/NAME-N`) and checks that the traces are
/// the same file for file, byte for byte; returns the files.
fn same_with_any_thread_count(src: &Path, work: &Path, name: &str) -> BTreeMap<String, Vec<u8>> {
    let mut first: Option<BTreeMap<String, Vec<u8>>> = None;
    for threads in ["1", "2", "5"] {
        let out = work.join(format!("{name}-{threads}"));
        let r = common::roverlog(&[
            OsStr::new("import"),
            src.as_os_str(),
            out.as_os_str(),
            OsStr::new("--threads"),
            OsStr::new(threads),
        ]);
        assert!(r.ok(), "{name}, {threads} threads: {}", r.text());
        assert!(
            r.stderr.contains("import: ") && r.stderr.contains("cores busy"),
            "{}",
            r.text()
        );
        let files = tree(&out);
        match &first {
            None => first = Some(files),
            Some(one) => {
                assert_eq!(
                    one.keys().collect::<Vec<_>>(),
                    files.keys().collect::<Vec<_>>(),
                    "{name}: the same files with {threads} threads"
                );
                for (f, bytes) in one {
                    assert!(
                        bytes == &files[f],
                        "{name}: {f} differs with {threads} threads"
                    );
                }
            }
        }
    }
    first.unwrap()
}

#[test]
fn import_is_the_same_byte_for_byte_on_one_thread_or_many() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();

    let trace = work.join("recorded");
    crate::replay::write_trace(&trace);
    let files = same_with_any_thread_count(&trace, work, "trace");
    assert!(files.contains_key("lidar/rng"), "{:?}", files.keys());

    let l5kit = common::root().join("tests/data/l5kit_single_scene.zarr");
    let files = same_with_any_thread_count(&l5kit, work, "l5kit");
    assert!(files.contains_key("agents/centroid"), "{:?}", files.keys());

    let gulp = common::root().join("tests/data/gulp_small");
    let files = same_with_any_thread_count(&gulp, work, "gulp");
    assert!(
        files.contains_key("camera/videos.json"),
        "{:?}",
        files.keys()
    );

    // ROS: point clouds (padded unorganized PointCloud2) and IMU, as a ROS 1 bag and as an
    // MCAP rosbag2 directory.
    let t = crate::rosbag::trace(&work.join("ros"));
    for (format, bag) in [("bag", "lidar.bag"), ("mcap", "lidar")] {
        let out = work.join(bag);
        let r = common::roverlog(&[
            OsStr::new("rosbag"),
            t.as_os_str(),
            OsStr::new("--format"),
            OsStr::new(format),
            OsStr::new("--out"),
            out.as_os_str(),
        ]);
        assert!(r.ok(), "{}", r.text());
        let files = same_with_any_thread_count(&out, work, &format!("ros-{format}"));
        assert!(files.contains_key("points2/x"), "{:?}", files.keys());
        assert!(files.contains_key("imu/ts"), "{:?}", files.keys());
    }
}
