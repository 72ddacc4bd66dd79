//! Fuzz target `ros1_bag`: see `checks::ros1_bag` for the invariants checked.
#![no_main]

#[path = "checks_ros.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ros1_bag(data));
