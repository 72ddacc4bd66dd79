//! The Python package (`python/`), built and tested through pip and pytest: the longest test,
//! in its own binary so `--test python` runs it alone.

// The helpers of tests/support/ this binary uses, compiled once for all its modules.
// `common`: shared by several test binaries, each using its own part (the rest is not dead).
#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod common;
}

mod package;
