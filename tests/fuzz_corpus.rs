//! Runs every fuzz target's check (`fuzz/fuzz_targets/checks.rs`) over its committed seeds in
//! `fuzz/corpus-seeds/<target>/` (inputs that once crashed included), with the normal test
//! harness: a regression is caught by `cargo test`, without cargo-fuzz or a nightly compiler.
//! Its own binary in the root package: the targets check core, the daemon's protocol and
//! config, and ROS, so it builds with all of them (not with core's tests).

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

fn run_seeds(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus-seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        // Name the input that broke, and go on to every prefix: a truncated input is an input.
        let r = std::panic::catch_unwind(|| {
            for cut in [bytes.len(), bytes.len() / 2, bytes.len().saturating_sub(1)] {
                check(&bytes[..cut]);
            }
        });
        assert!(r.is_ok(), "{target}: seed {} fails", f.display());
    }
}

#[test]
fn frame_seeds() {
    run_seeds("frame", checks::frame);
}

#[cfg(feature = "jpeg")]
#[test]
fn jpeg_seeds() {
    run_seeds("jpeg", checks::jpeg);
}

#[test]
fn lidar_json_seeds() {
    run_seeds("lidar_json", checks::lidar_json);
}

#[test]
fn meta_json_seeds() {
    run_seeds("meta_json", checks::meta_json);
}

#[test]
fn lzmaf_index_seeds() {
    run_seeds("lzmaf_index", checks::lzmaf_index);
}

#[test]
fn stored_xz_seeds() {
    run_seeds("stored_xz", checks::stored_xz);
}

#[test]
fn gulp_meta_seeds() {
    run_seeds("gulp_meta", checks::gulp_meta);
}

#[test]
fn zarr_meta_seeds() {
    run_seeds("zarr_meta", checks::zarr_meta);
}

#[test]
fn blosc_chunk_seeds() {
    run_seeds("blosc_chunk", checks::blosc_chunk);
}

#[test]
fn avi_seeds() {
    run_seeds("avi", checks::avi);
}

#[test]
fn zarr_codec_seeds() {
    run_seeds("zarr_codec", checks::zarr_codec);
}

#[test]
fn zarr_order_seeds() {
    run_seeds("zarr_order", checks::zarr_order);
}

#[test]
fn http_host_seeds() {
    run_seeds("http_host", checks::http_host);
}

#[test]
fn rosbag2_meta_seeds() {
    run_seeds("rosbag2_meta", checks::rosbag2_meta);
}

#[test]
fn ros_cdr_seeds() {
    run_seeds("ros_cdr", checks::ros_cdr);
    // The seeds reach the mapping (they are messages rosbags serialized, not noise); the
    // inputs fuzzing found (`bad-*`) are refused.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus-seeds/ros_cdr");
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let n = checks::ros_cdr_channels(&std::fs::read(&path).unwrap());
        let bad = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("bad-");
        assert!(
            if bad { n.is_none() } else { n.unwrap_or(0) > 0 },
            "{}: maps to {n:?} channels",
            path.display()
        );
    }
}

#[test]
fn ros_mcap_seeds() {
    run_seeds("ros_mcap", checks::ros_mcap);
    ros_seeds_reach_messages("ros_mcap");
}

#[test]
fn ros1_bag_seeds() {
    run_seeds("ros1_bag", checks::ros1_bag);
    ros_seeds_reach_messages("ros1_bag");
}

/// The recordings among the seeds import their topics (they are what rosbags and mcap wrote,
/// not noise); the damaged copies (`bad-*`) are refused.
fn ros_seeds_reach_messages(target: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus-seeds")
        .join(target);
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let got = checks::ros_recording_sensors(target, &std::fs::read(&path).unwrap());
        let bad = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("bad-");
        match got {
            Ok(n) if !bad && n > 0 => {}
            Err(_) if bad => {}
            other => panic!("{}: opens as {other:?}", path.display()),
        }
    }
}

#[test]
fn rosbag2_dir_seeds() {
    run_seeds("rosbag2_dir", checks::rosbag2_dir);
    ros_seeds_reach_messages("rosbag2_dir");
}
