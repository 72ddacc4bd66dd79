//! The proofs of issues 6 and 12 against the real daemon: socket access, the kill -9 loop,
//! overload on a slow disk, the soak, and power cuts on the power-loss FUSE filesystem (and
//! that filesystem's own promises). `ROVERLOG_TORTURE=long` turns them into their long runs.

// The helpers of tests/support/ this binary uses, compiled once for all its modules.
// `common` and `daemon`: shared by several test binaries, each using its own part (the rest is not dead).
// `powercut` and `torture` serve only this binary: what it leaves unused is dead.
#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod common;
    #[allow(dead_code)]
    pub mod daemon;
    pub mod powercut;
    pub mod torture;
}

mod access;
mod crash;
mod overload;
mod powercut;
mod powercut_fs;
mod soak;
