//! The export's error: roverlog-core's (reading a local trace, writing the file), reading a
//! trace in place ([`RemoteError`], boxed: it is the larger), or a position mapping that does
//! not fit its sensor ([`LocationError`]), each converting with `From`.

use roverlog_core::remote::RemoteError;

use crate::location::error::LocationError;

/// Why `export_mcap` wrote nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),
    #[error(transparent)]
    Location(#[from] LocationError),
    #[error(transparent)]
    Remote(Box<RemoteError>),
}
