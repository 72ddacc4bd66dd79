//! roverlog: a sensor-data logger that writes roverd traces, and readers for the datasets
//! our users replay (roverd, GulpIO2, L5Kit zarr).
//!
//! # Crate map
//!
//! Dependencies point downwards only; nothing below `daemon` knows about tokio or sockets.
//!
//! - [`error`]: the one error enum, carrying the values involved.
//! - [`format`]: the roverd on-disk format: `meta.json`, channel writers and readers
//!   (`raw`, `lzma`, `lzmaf`, blob directories), [`format::Sensor`], [`format::Trace`],
//!   and the consistency check / crash recovery.
//! - [`zarr`]: Zarr v2 reader (Blosc and the numcodecs compressors, structured dtypes) and
//!   the L5Kit dataset layer on top ([`zarr::l5kit::ChunkedDataset`]).
//!
//! See `ARCHITECTURE.md` for the data flow from socket to disk.

pub mod error;
pub mod format;
pub mod zarr;

pub use error::{Error, Result};
