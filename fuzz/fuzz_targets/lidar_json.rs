//! Fuzz target `lidar_json`: see `checks::lidar_json` for the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::lidar_json(data));
