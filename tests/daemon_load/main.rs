//! The daemon under CPU load (issue 39): a test binary of its own, so the load it makes
//! never runs beside the other daemon tests (cargo runs test binaries one after another;
//! the notify watchdog test once flaked under load). Needs nothing beyond the daemon tests.

// The shared test helpers: the roverlog-testkit crate (crates/testkit).
mod support {
    pub use roverlog_testkit::daemon;
}

mod cpu_load;
