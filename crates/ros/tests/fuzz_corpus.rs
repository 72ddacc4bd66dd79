//! Runs every ROS fuzz target's check (`fuzz/fuzz_targets/checks_ros.rs`) over its committed
//! seeds in `fuzz/corpus-seeds/<target>/` (inputs that once crashed included), with the normal
//! test harness: a regression is caught by `cargo test`, without cargo-fuzz or a nightly
//! compiler.

#[path = "../../../fuzz/fuzz_targets/checks_ros.rs"]
mod checks;

use std::path::Path;

fn run_seeds(target: &str, check: fn(&[u8])) {
    roverlog_testkit::fuzz::run_seeds(&seeds_dir(), target, check);
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
    let dir = seeds_dir().join("ros_cdr");
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
    let dir = seeds_dir().join(target);
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

/// `fuzz/corpus-seeds/` at the workspace's root.
fn seeds_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus-seeds")
}
