//! Fuzz target `ros2_metadata`: see `checks::ros2_metadata` for the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ros2_metadata(data));
