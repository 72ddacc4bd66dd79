//! Fuzz target `zarr_order`: see `checks::zarr_order` for the input layout and the invariant checked.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::zarr_order(data));
