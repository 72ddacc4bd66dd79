//! Fuzz target `ros_cdr`: see `checks::ros_cdr` for the invariants checked.
#![no_main]

#[path = "checks_ros.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ros_cdr(data));
