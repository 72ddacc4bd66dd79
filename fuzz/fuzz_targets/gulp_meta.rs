//! Fuzz target `gulp_meta`: see `checks::gulp_meta` for the input layout and the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::gulp_meta(data));
