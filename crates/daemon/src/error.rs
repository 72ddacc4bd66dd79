//! The daemon's own errors: what stops it from starting (sockets, listeners, another daemon
//! holding them) or ends its run uncleanly (a shutdown past its deadline, a failed disk, a
//! task that broke). roverlog-core's errors (the config, the data's files) convert into it
//! with `From`. The binary maps them to exit codes (`roverlog daemon --help`).

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::disk_fault::Fault;

mod config;

pub use config::ConfigProblem;

/// Result alias of the daemon.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the daemon could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An invalid config, or an error on the data's files.
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),

    /// A value of the config document that the daemon cannot use.
    /// (Part of the message, not its `source`: a chain printer would print it twice.)
    #[error("config: {0}")]
    Config(ConfigProblem),

    /// Another running daemon holds `path` (a socket it listens on, or data_root's lock).
    #[error("{}: another daemon is {holds}", path.display())]
    InUse { path: PathBuf, holds: &'static str },

    /// A socket the config asks for that cannot be made as configured.
    #[error("config: {0}")]
    // Not `#[from]`: that would make it the source too, and `{:#}` would print it twice.
    Socket(SocketProblem),

    /// A listener the config asks for (`key`: `http_listen`, `foxglove_listen`) could not be
    /// set up at `addr`.
    #[error("{key} {addr}: {problem}")]
    Listen {
        key: &'static str,
        addr: SocketAddr,
        problem: ListenProblem,
    },

    /// The daemon's drain (connections, queues, fsync) did not end within the deadline.
    #[error("shutdown did not finish within shutdown_deadline_ms ({deadline_ms} ms); queued samples may be lost")]
    ShutdownDeadline { deadline_ms: u64 },

    /// The daemon drained and stopped, but a write or fsync of its data failed during the run
    /// (`first`: the first failure still unresolved, if one is): not a clean stop, so a
    /// service manager restarts it and the journal says why.
    #[error("stopped, but the data disk failed during the run: {}",
            first.as_ref().map_or_else(|| "a write or fsync failed during the run (see the log)".to_string(), ToString::to_string))]
    DiskFailed { first: Option<Box<Fault>> },

    /// A thread or task of the daemon could not start, or ended abnormally: `what` it was,
    /// and the error it met.
    #[error("{what}: {error}")]
    Task {
        what: &'static str,
        error: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// An I/O error on `path` (roverlog-core's).
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        Error::Core(roverlog_core::Error::io(path, error))
    }
}

impl From<ConfigProblem> for Error {
    fn from(problem: ConfigProblem) -> Self {
        Error::Config(problem)
    }
}

/// Why a listener could not be set up ([`Error::Listen`]).
#[derive(Debug, thiserror::Error)]
pub enum ListenProblem {
    /// The address cannot be bound (in use, not ours, no permission).
    #[error("cannot listen: {0}")]
    Bind(Box<dyn std::error::Error + Send + Sync>),
    /// The bound socket could not be set up.
    #[error("{0}")]
    Setup(std::io::Error),
}

/// A Unix socket that cannot be made as configured ([`Error::Socket`]).
#[derive(Debug, thiserror::Error)]
pub enum SocketProblem {
    /// A path the kernel cannot take as a socket address (too long).
    #[error("{}: {error}", path.display())]
    Path {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Something other than a socket at the path: never replaced.
    #[error("{}: exists and is not a socket; not replacing it", path.display())]
    NotASocket { path: PathBuf },
    /// `socket_group` names a group the daemon's user is not in.
    #[error("socket_group (gid {gid}) for {}: the daemon's user is not a member of that group, so it may not give it the socket ({error})", path.display())]
    NotInGroup {
        gid: u32,
        path: PathBuf,
        error: std::io::Error,
    },
    /// A `socket_group` with a NUL byte.
    #[error("socket_group {group:?} contains NUL")]
    GroupNul { group: String },
    /// A `socket_group` that names no group.
    #[error("socket_group {group:?}: no such group")]
    NoGroup { group: String },
}

impl From<SocketProblem> for Error {
    fn from(e: SocketProblem) -> Self {
        Error::Socket(e)
    }
}
