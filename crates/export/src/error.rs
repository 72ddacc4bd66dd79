//! The export's error: roverlog-core's (reading the trace, writing the file) or a position
//! mapping that does not fit its sensor ([`LocationError`]), each converting with `From`.

use crate::location::LocationError;

/// Why `export_mcap` wrote nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),
    #[error(transparent)]
    Location(#[from] LocationError),
}
