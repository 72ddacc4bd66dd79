//! Reading a trace where it lies, by byte ranges: on object storage (`s3://`, through
//! `roverlog-store`, which implements [`TraceFiles`]) or, for tests and tools, a directory
//! ([`LocalFiles`]). Plain Rust: this module knows no S3 and no async runtime; a backend is
//! two small traits.
//!
//! - [`RangeFile`]: one file's length and a byte range of it (one request per call).
//! - [`TraceFiles`]: a trace's files, listed once (paths relative to the trace, sizes), and
//!   opened by path.
//! - [`RemoteTrace`] / [`RemoteSensor`] / [`RemoteChannel`]: the readers over them. On open
//!   they keep what every read needs (the listing, each sensor's `meta.json` and `ts`, a
//!   channel's own index: `lzmaf`'s `_i` file, a video's `idx1`), so that after a channel is
//!   open one sample costs one range request of about its own size (a video frame: its
//!   chunk, 8 bytes more; an `lzmaf` frame: exactly its compressed bytes; a `raw` sample:
//!   its bytes; a blob sample: its file). Whole-file `lzma` channels are fetched whole when
//!   first read; a video without a usable `idx1` (OpenDML files over 1 GiB, a file a crash
//!   cut) is fetched whole and parsed as the local reader parses it.
//!
//! Local traces keep their mapped readers ([`crate::format`]); the verbs pick this module by
//! the path's scheme.

mod avi;
mod channel;
mod error;
mod fetch;
mod local;
mod trace;

pub use channel::RemoteChannel;
pub use error::{FrameDamage, RemoteError};
pub use local::LocalFiles;
pub use trace::{RemoteSensor, RemoteTrace};

use std::ops::Range;

/// A boxed error from a backend (the store's own errors name the bucket, endpoint and key).
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// One file, read by byte ranges.
pub trait RangeFile: Send + Sync {
    /// The file's length in bytes (as listed when the trace was opened).
    fn len(&self) -> u64;

    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes `range` of the file: one request.
    fn read_range(&self, range: Range<u64>) -> Result<Vec<u8>, BackendError>;
}

/// The files of one trace.
pub trait TraceFiles: Send + Sync {
    /// Where the trace is, for messages (`s3://bucket/prefix/trace`, a directory).
    fn location(&self) -> String;

    /// [`TraceFiles::location`] and how it is reached, for the message that nothing is
    /// there (`s3://bucket/prefix/trace at http://host:3900`).
    fn describe(&self) -> String {
        self.location()
    }

    /// Every file of the trace: its `/`-separated path relative to the trace, and its size.
    fn list(&self) -> Result<Vec<(String, u64)>, BackendError>;

    /// The file at `path` (relative to the trace), whose size the listing gave.
    fn open(&self, path: &str, len: u64) -> Result<Box<dyn RangeFile>, BackendError>;
}

#[cfg(test)]
mod tests;
