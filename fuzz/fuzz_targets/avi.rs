//! Fuzz target `avi`: see `checks::avi` for the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::avi(data));
