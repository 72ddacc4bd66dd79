//! Fuzz target `jpeg`: see `checks::jpeg` for the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::jpeg(data));
