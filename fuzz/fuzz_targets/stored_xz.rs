//! Fuzz target `stored_xz`: see `checks::stored_xz` for the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::stored_xz(data));
