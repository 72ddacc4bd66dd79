//! Fuzz target `rosbag2_meta`: see `checks::rosbag2_meta` for the invariants checked.
#![no_main]

#[path = "checks_ros.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::rosbag2_meta(data));
