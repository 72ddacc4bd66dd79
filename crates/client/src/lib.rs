//! roverlog-client: the driver side of roverlog's ingest protocol (`docs/protocol.md`),
//! blocking, std only, and replay of a dataset into a running daemon.
//!
//! - [`driver`]: one connection per sensor ([`Driver`]): hello, frame encoding, durability
//!   requests.
//! - [`play`](mod@play): a [`roverlog_core::replay::Source`] pushed into a daemon at a chosen
//!   rate, scheduled against one monotonic start.
//!
//! Depends on `roverlog-core` only: the Python binding and `roverlog replay` use it.

pub mod driver;
pub mod play;

pub use driver::{is_daemon_gone, Driver};
pub use play::{play, PlayOptions, PlayReport};
