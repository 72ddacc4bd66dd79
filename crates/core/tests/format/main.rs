//! The format library and the readers, in process: round trips, and the GulpIO2 and L5Kit
//! zarr fixtures. Needs no peer and no other crate of the workspace
//! (`scripts/test --quick`). The durable watermark's test is its own binary
//! (`format_powercut.rs`): it sets the process's boot id, which every sensor written here
//! would see. Torn tails found and cut by `roverlog validate`/`recover` are the CLI's
//! (`tests/cli/crash.rs`).

// The shared test helpers: the roverlog-testkit crate (crates/testkit).
mod support {
    pub use roverlog_testkit::common;
}

mod gulp_fixture;
#[cfg(feature = "jpeg")]
mod jpeg_decoders;
mod roundtrip;
mod zarr_corrupt;
mod zarr_fixture;
