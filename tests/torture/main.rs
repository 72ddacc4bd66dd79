//! The proofs of issues 6 and 12 against the real daemon: socket access, the kill -9 loop,
//! overload on a slow disk, the soak, and power cuts on the power-loss FUSE filesystem (and
//! that filesystem's own promises). `ROVERLOG_TORTURE=long` turns them into their long runs.

// The shared test helpers are the roverlog-testkit crate (crates/testkit); the helpers
// only this binary uses stay in tests/support/.
#[path = "../support"]
mod support {
    pub use roverlog_testkit::{common, daemon};
    pub mod powercut;
    pub mod torture;
}

mod access;
mod crash;
mod overload;
mod powercut;
mod powercut_fs;
mod soak;
