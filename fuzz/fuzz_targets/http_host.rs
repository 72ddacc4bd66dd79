//! Fuzz target `http_host`: see `checks::http_host` for the input layout and the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::http_host(data));
