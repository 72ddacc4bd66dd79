//! The daemon. (Placeholder module list from the daemon-aux branch: the lead merges it with
//! the core engineer's `src/daemon/mod.rs`.)

pub mod notify;
