//! The daemon under CPU load (issue 39): a test binary of its own, so the load it makes
//! never runs beside the other daemon tests (cargo runs test binaries one after another;
//! the notify watchdog test once flaked under load). Needs nothing beyond the daemon tests.

#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod common;
    #[allow(dead_code)]
    pub mod daemon;
}

mod cpu_load;
