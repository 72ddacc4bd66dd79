//! roverlog-core: the roverd on-disk format and the readers for the datasets our users replay
//! (roverd, GulpIO2, L5Kit zarr), each reader with its replay source beside it. Plain Rust
//! over files and bytes: no tokio, no sockets, no daemon, no ROS (that is `roverlog-ros`).
//! Every other roverlog crate stands on this one.
//!
//! # Crate map
//!
//! From the top down; each module uses only modules below it in this list.
//!
//! - [`import`](mod@import): a replay source written into a new roverd trace (sensor by
//!   sensor, or every sensor at once in time order), no daemon involved.
//! - [`gulp`]: reader for GulpIO2 video datasets (`data_<n>.gulp` + `meta_<n>.gmeta`):
//!   zero-copy JPEG frames from mapped files, sanity check, summary; [`gulp::GulpSource`]
//!   presents a directory as one camera sensor.
//! - [`zarr`]: Zarr v2 reader (Blosc and the numcodecs compressors, structured dtypes) and
//!   the L5Kit dataset layer on top ([`zarr::l5kit::ChunkedDataset`], presented as sensors by
//!   [`zarr::l5kit::L5KitSource`]).
//! - [`replay`]: what a replay source is ([`replay::Source`]), a roverd trace as one,
//!   time-merged reading and nearest synchronisation (playback into a daemon is
//!   `roverlog-client`'s).
//! - [`ouster`]: Ouster `lidar.json` intrinsics and the per-pixel table that projects a
//!   depth frame to points (upstream's `transforms.ouster`). [`timestamps`]: upstream's
//!   timestamp models (`smooth`, `discretize`) for jittered receive times.
//! - [`remote`]: traces read in place by byte ranges (object storage, through a backend
//!   `roverlog-store` implements), one request per sample once a channel is open.
//! - [`format`](mod@format): the roverd on-disk format: `meta.json`, channel writers and readers
//!   (`raw`, `lzma`, `lzmaf`, blob directories, `mjpg` AVI video), the sample types
//!   ([`format::dtype`], `f2` values included), [`format::Sensor`], [`format::Trace`], and the
//!   consistency check / crash recovery.
//! - [`jpeg`] (feature `jpeg`): JPEG frames to pixels (libjpeg-turbo where it loads, else
//!   zune-jpeg), for gulp frames and `mjpg` video.
//! - [`parallel`]: ordered work on every core (items produced by several threads, taken in
//!   order); [`cpus`]: the CPUs this process may use (affinity and cgroup quota) and the
//!   cores a piece of work kept busy.
//! - [`io`], [`mem`], [`noise`]: untrusted files read with a size limit and files mapped
//!   that may be empty; the huge-page hint for large fresh buffers; a deterministic
//!   incompressible byte stream for tests and benches.
//! - [`error`]: the error enum, carrying the values involved; it uses none of the above.
//!
//! See `ARCHITECTURE.md` for the crates around this one.

pub mod cpus;
pub mod error;
pub mod format;
pub mod gulp;
pub mod import;
pub mod io;
#[cfg(feature = "jpeg")]
pub mod jpeg;
pub mod mem;
pub mod ouster;
pub mod parallel;
pub mod remote;
pub mod replay;
pub mod timestamps;
pub mod zarr;

pub use error::{Error, Result};

/// `n` bytes of an xorshift stream from `seed` (made odd): not one repeated value, so a
/// compressor has real work and a file system that compresses or dedups flatters nothing.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
