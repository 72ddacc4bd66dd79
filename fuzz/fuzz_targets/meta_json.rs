//! Fuzz target `meta_json`: see `checks::meta_json` for the input layout and the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::meta_json(data));
