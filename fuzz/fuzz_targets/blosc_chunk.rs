//! Fuzz target `blosc_chunk`: see `checks::blosc_chunk` for the input layout.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::blosc_chunk(data));
