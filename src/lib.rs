//! roverlog: a sensor-data logger that writes roverd traces, and readers for the datasets
//! our users replay (roverd, GulpIO2, L5Kit zarr).
//!
//! # Crate map
//!
//! Dependencies point one way: `daemon` and the CLI use everything below them; the format
//! library and the readers are plain Rust over files and bytes and know nothing of tokio,
//! sockets or the daemon.
//!
//! - [`error`]: the one error enum, carrying the values involved.
//! - [`format`](mod@format): the roverd on-disk format: `meta.json`, channel writers and readers
//!   (`raw`, `lzma`, `lzmaf`, blob directories, `mjpg` AVI video), [`format::Sensor`],
//!   [`format::Trace`], and the consistency check / crash recovery.
//! - [`gulp`]: reader for GulpIO2 video datasets (`data_<n>.gulp` + `meta_<n>.gmeta`):
//!   zero-copy JPEG frames from mapped files, sanity check, summary, optional JPEG decode.
//! - [`zarr`]: Zarr v2 reader (Blosc and the numcodecs compressors, structured dtypes) and
//!   the L5Kit dataset layer on top ([`zarr::l5kit::ChunkedDataset`]).
//! - [`replay`]: time-merged reading, nearest synchronisation, datasets as sensor sources,
//!   playback into a daemon and import into roverd.
//! - [`timestamps`]: upstream's timestamp models (`smooth`, `discretize`) for jittered
//!   receive times.
//! - [`client`]: the driver side of the ingest protocol (blocking, std only).
//! - [`daemon`]: the logging daemon (tokio): ingest and control sockets, per-sensor writer
//!   threads on top of [`format`](mod@format), durability, events, status, systemd notification.
//!   Nothing else in the library uses it.
//! - [`bench`](mod@bench): load generator and same-run baselines (`dd`, a plain socket sink) for
//!   `roverlog bench` and `cargo bench`.
//!
//! See `ARCHITECTURE.md` for the data flow from socket to disk.

pub mod bench;
pub mod client;
pub mod daemon;
pub mod error;
pub mod export;
pub mod format;
pub mod gulp;
mod io;
pub mod mem;
pub mod plot;
pub mod replay;
pub mod timestamps;
pub mod zarr;

pub use error::{Error, Result};
