//! Fuzz target `zarr_meta`: see `checks::zarr_meta`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::zarr_meta(data));
