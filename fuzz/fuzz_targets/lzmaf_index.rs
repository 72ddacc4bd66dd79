//! Fuzz target `lzmaf_index`: see `checks::lzmaf_index` for the input layout and the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::lzmaf_index(data));
