//! Fuzz target `zarr_codec`: see `checks::zarr_codec` for the input layout and the invariants checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::zarr_codec(data));
