//! What roverlog's integration tests share, as a crate (`publish = false`) that the test
//! binaries take as a dev-dependency, instead of each compiling `tests/support/` through
//! `#[path]` lines:
//!
//! - [`common`]: the workspace root, the Python peers' venv (`scripts/py-env.sh`), the
//!   `roverlog` binary of this test run, mounts (tmpfs, loop-mounted ext4), video checks
//!   against ffmpeg, upstream's reader on our traces.
//! - [`fuzz`]: a fuzz target's committed seeds run through its check.
//! - `daemon` (feature `daemon`): a real `roverlog daemon` on sockets and a data directory in
//!   a temp dir, spoken to as a driver, a control client and over HTTP.
//!
//! Helpers used by one test binary alone stay beside it (`tests/support/garage.rs`,
//! `powercut.rs`, `torture.rs`). Not every test uses every helper, so dead code is allowed
//! here once instead of in each test's `main.rs`.

pub mod common;
#[cfg(feature = "daemon")]
pub mod daemon;
pub mod fuzz;
