//! roverlog-client: the driver side of roverlog's ingest protocol (`docs/protocol.md`),
//! blocking, std only, and replay of a dataset into a running daemon.
//!
//! - [`driver`]: one connection per sensor ([`Driver`]): hello, frame encoding, durability
//!   requests; [`is_daemon_gone`] tells a daemon that went away from a refusal.
//! - [`resilient`]: [`ResilientDriver`], a sensor's samples across daemon restarts:
//!   batching, reconnection with back-off, and resending what the daemon did not keep, from
//!   the [`retain`] buffer of frames not yet acknowledged durable.
//! - [`play`](mod@play): a [`roverlog_core::replay::Source`] pushed into a daemon at a chosen
//!   rate, scheduled against one monotonic start, through resilient drivers.
//!
//! - [`sidecar`]: files for the sensor's directory sent with the hello ([`SidecarFile`]).
//! - [`error`]: the client's [`Error`], with a small enum per operation.
//!
//! Dependencies point down that list (`play` -> `resilient` -> `retain`, `driver`), and
//! outside the crate to `roverlog-core` only: the Python binding and `roverlog replay` use it.

pub mod driver;
pub mod error;
pub mod play;
pub mod resilient;
pub mod retain;
pub mod sidecar;

pub use driver::{is_daemon_gone, Driver, Durable, HelloFlags};
pub use error::{Error, Result};
pub use play::{play, PlayOptions, PlayReport};
pub use resilient::{ResilientDriver, ResilientOptions};
pub use sidecar::SidecarFile;
