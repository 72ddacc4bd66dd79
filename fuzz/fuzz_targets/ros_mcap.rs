//! Fuzz target `ros_mcap`: see `checks::ros_mcap` for the invariants checked.
#![no_main]

#[path = "checks_ros.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ros_mcap(data));
