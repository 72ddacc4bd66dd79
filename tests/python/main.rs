//! The Python package (`python/`), built and tested through pip and pytest: the longest test,
//! in its own binary so `--test python` runs it alone.

// The shared test helpers: the roverlog-testkit crate (crates/testkit).
mod support {
    pub use roverlog_testkit::common;
}

mod package;
