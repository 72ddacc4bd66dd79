//! Fuzz target `frame`: see `checks::frame` for the input layout and the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::frame(data));
