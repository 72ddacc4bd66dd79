//! The format library and the readers, in process: round trips, torn tails, the fuzz seeds,
//! and the GulpIO2 and L5Kit zarr fixtures. Needs no peer (part of `scripts/test --quick`).
//! The durable watermark's test is its own binary (`tests/format_powercut.rs`): it sets the
//! process's boot id, which every sensor written here would see.

// The helpers of tests/support/ this binary uses, compiled once for all its modules.
// `common`: shared by several test binaries, each using its own part (the rest is not dead).
#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod common;
}

mod crash;
mod fuzz_corpus;
mod gulp_fixture;
#[cfg(feature = "jpeg")]
mod jpeg_decoders;
mod roundtrip;
mod zarr_corrupt;
mod zarr_fixture;
