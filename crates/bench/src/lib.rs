//! Ingest benchmarks: what the daemon is measured with and what it is measured against.
//!
//! - [`load`]: a client speaking the ingest protocol (`docs/protocol.md`) with N synthetic
//!   sensors; [`load::drive`] is what `roverlog bench` points at a running daemon.
//! - [`baselines`]: the ceilings and the floor around it: `dd` to the target disk (the
//!   disk's own limit), a plain length-prefixed Unix-socket sink (the cost of the socket plus
//!   one `write()` per message, with no format, no checks), and, in `scripts/bench/`, the
//!   upstream-style Python writer we replace.
//! - [`lidar`]: realistic lidar frames (a ray-cast street: smooth surfaces, edges, noise) for
//!   the `.xz` encoder bench and the `lzmaf` tests.
//! - [`procfs`]: the daemon's resident memory and the target directory's filesystem, read
//!   from `/proc`.
//! - [`runner`]: `roverlog bench` itself (the binary only parses its arguments): the
//!   scenarios' table (name, what it measures, the function that runs it), the daemon run as
//!   a child process per scenario, the data check and the reports.
//!
//! - [`error`]: the bench's [`Error`](error::Error); the client's and core's convert into it.
//!   The runner's [`RunError`](runner::RunError) (`runner/error.rs`: one small enum per
//!   operation: options, the daemon child, commands, peers, viewers, scenarios, faults)
//!   wraps it; `anyhow` stays in the binary.
//!
//! Plain std threads and blocking sockets: the harness must not share the daemon's runtime
//! or its bugs. Results are [`Throughput`]s, printed as MB/s and samples/s.

pub mod baselines;
pub mod disk;
pub mod error;
pub mod hour;
pub mod lidar;
pub mod load;
pub mod offload;
pub mod procfs;
pub mod rig;
pub mod rosbag_trace;
pub mod runner;

pub use roverlog_core::noise;

use std::fmt;
use std::time::Duration;

/// Bytes and samples moved in a measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    /// What was measured, e.g. `"dd conv=fdatasync"`.
    pub name: String,
    /// Bytes moved (for protocol clients: wire bytes, framing included).
    pub bytes: u64,
    /// Samples (records, frames) moved; 0 where the notion does not apply (`dd`).
    pub samples: u64,
    pub elapsed: Duration,
}

impl Throughput {
    /// Megabytes (10^6 bytes) per second.
    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Samples per second.
    pub fn samples_per_sec(&self) -> f64 {
        self.samples as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for Throughput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<34} {:>10.1} MB/s", self.name, self.mb_per_sec())?;
        if self.samples > 0 {
            write!(f, " {:>12.0} samples/s", self.samples_per_sec())?;
        } else {
            write!(f, " {:>22}", "")?;
        }
        write!(
            f,
            "  ({} bytes, {} samples, {:.3} s)",
            self.bytes,
            self.samples,
            self.elapsed.as_secs_f64()
        )
    }
}
