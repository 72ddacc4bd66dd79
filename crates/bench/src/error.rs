//! The bench's errors: a load spec that cannot run, a sink or sensor that did not get what
//! was sent; the daemon client's and roverlog-core's errors convert into it with `From`.

/// Result alias of the bench.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong running a bench.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file, trace or codec error.
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),
    /// Talking to the daemon failed.
    #[error(transparent)]
    Client(#[from] roverlog_client::Error),
    /// A load spec or workload that cannot run.
    #[error("config: bench {0}")]
    Spec(SpecProblem),
    /// A baseline's sink got fewer records than were sent (`what`: the sink).
    #[error("protocol error: {what} received {got} of {sent} records")]
    Short {
        what: &'static str,
        got: u64,
        sent: u64,
    },
    /// A sensor of the load whose samples the daemon did not all confirm durable.
    #[error("protocol error: bench sensor {sensor:?}: durable {durable} after sending {sent} samples on top of {resumed_from}")]
    NotDurable {
        sensor: String,
        durable: u64,
        sent: u64,
        resumed_from: u64,
    },
    /// A rig frame the JPEG encoder refused.
    #[error("config: encoding a {width}x{height} JPEG: {error}")]
    Encode {
        width: usize,
        height: usize,
        error: image::ImageError,
    },
}

impl Error {
    /// An I/O error on `path` (roverlog-core's).
    pub fn io(path: impl Into<std::path::PathBuf>, error: std::io::Error) -> Self {
        Error::Core(roverlog_core::Error::io(path, error))
    }
}

/// What is wrong with a load spec ([`Error::Spec`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecProblem {
    #[error("load: at least one sensor")]
    NoSensor,
    #[error("workload: per_write must be at least 1")]
    PerWrite,
    #[error("workload: large frames need at least 1 byte")]
    LargeEmpty,
    #[error("workload: lidar frames need a positive, even byte count")]
    LidarBytes { bytes: usize },
    #[error("workload: need 0 < min_bytes <= max_bytes")]
    BlobBytes { min_bytes: usize, max_bytes: usize },
}
