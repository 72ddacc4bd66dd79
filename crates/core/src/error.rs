//! roverlog-core's error type: what core itself raises. The crates above it raise their own
//! (`roverlog_client::Error`, `roverlog_daemon::Error`, `roverlog_bench::Error`, the Python
//! binding's `BindError`), each converting this one with `From`, as redb does.
//!
//! Every variant carries the values involved (the path, the sensor or channel, what was
//! expected and what was found) so that a message printed to a user names what was wrong
//! without further context. Binaries wrap this in `anyhow` and map it to exit codes.

use std::path::PathBuf;

mod avi;
mod blob;
mod config;
mod corrupt;
mod damage;
mod gulp;
mod jpeg;
mod lidar;
mod meta;
mod zarr;
mod zarr_layout;

pub use avi::AviProblem;
pub use blob::BlobProblem;
pub use config::ConfigProblem;
pub use corrupt::{CorruptProblem, XzProblem};
pub use damage::{zero_filled, Damage, ZERO_RUN};
pub use gulp::GulpProblem;
pub use jpeg::JpegProblem;
#[cfg(feature = "jpeg")]
pub use jpeg::TurboError;
pub use lidar::LidarProblem;
pub use meta::MetaProblem;
pub use zarr::{ChunkProblem, DTypeProblem, FillProblem, SettingProblem};
pub use zarr_layout::ZarrProblem;

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ----- general ---------------------------------------------------------------------
    // The OS's or parser's own error is part of a variant's message, never its `source`
    // (as in [`Error::At`]): the binary prints errors with their chain (`{:#}`), which would
    // print it twice. [`Error::io_error`] finds the `std::io::Error` behind an error.
    /// An operating-system I/O error on a named file.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },

    /// A JSON document that did not parse.
    #[error("{}: invalid JSON: {error}", path.display())]
    Json {
        path: PathBuf,
        error: serde_json::Error,
    },

    /// An input larger than the limit we accept for it.
    #[error("{what} is {got} bytes, over the limit of {limit}")]
    TooLarge { what: String, got: u64, limit: u64 },

    // ----- roverd format ---------------------------------------------------------------
    /// A sensor or channel name that cannot be used.
    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        kind: &'static str,
        name: String,
        reason: &'static str,
    },

    /// A numpy type code we do not know.
    #[error(
        "unknown type code {code:?} (expected one of u1 i1 u2 i2 u4 i4 u8 i8 f2 f4 f8 c8 c16 b1)"
    )]
    InvalidType { code: String },

    /// A `meta.json` (or a channel description inside one) that is not valid. (Boxed, as
    /// [`Error::Gulp`].)
    #[error("{}: {problem}", path.display())]
    InvalidMeta {
        path: PathBuf,
        problem: Box<MetaProblem>,
    },

    /// A channel description in `meta.json` that does not parse.
    #[error("{}: channel {channel:?}: {problem}", path.display())]
    InvalidChannel {
        path: PathBuf,
        channel: String,
        problem: ChannelSpecProblem,
    },

    /// A channel stored in a format this library cannot read or write.
    #[error("channel {channel:?}: unsupported format {format:?}")]
    UnsupportedFormat { channel: String, format: String },

    /// A sample index past the end of a channel.
    #[error("{}: sample {index} out of range (channel holds {len})", path.display())]
    OutOfRange { path: PathBuf, index: u64, len: u64 },

    /// A sample the sensor counts (in `ts`, or in the channel's own index or listing) that
    /// the channel cannot give: its bytes are missing, cut or do not decode. The readers
    /// still give every intact sample around it (docs/format.md "Damaged channels").
    #[error("{}: sample {index} is damaged: {damage} ({})", path.display(), damage.advice())]
    DamagedSample {
        path: PathBuf,
        index: u64,
        damage: Damage,
    },

    /// A sample whose byte length does not match the channel's type and shape.
    #[error("channel {channel:?}: sample is {got} bytes, expected {expected}")]
    SampleSize {
        channel: String,
        expected: usize,
        got: usize,
    },

    /// An empty sample for a blob channel: an empty sample file is how a sample lost in a
    /// power cut looks, so it is never written.
    #[error("channel {channel:?}: empty sample (a jpg/npz sample needs at least one byte)")]
    EmptySample { channel: String },

    /// Bytes on disk that contradict the format (torn tail, bad index, bad container).
    #[error("{}: {problem}", path.display())]
    Corrupt {
        path: PathBuf,
        problem: CorruptProblem,
    },

    /// A directory that is not what the caller asked for (trace, sensor, dataset).
    #[error("{}: not a {expected}", path.display())]
    NotA {
        path: PathBuf,
        expected: &'static str,
    },

    /// An `mjpg` file with problems other than a missing trailer, which recovery must fix
    /// before anything is appended to it.
    #[error("{}: {} (run `roverlog recover`)", path.display(), join(problems))]
    AviNeedsRecovery {
        path: PathBuf,
        problems: Vec<AviProblem>,
    },

    /// An `mjpg` channel file that is not AVI at all.
    #[error("not an AVI file (no RIFF 'AVI ' header)")]
    NotAvi,

    /// A path-less error (one of the variants above that names no file) about `path`. The
    /// inner error is part of this message, not its `source`: a chain printer (`{:#}`) would
    /// print it twice.
    #[error("{}: {inner}", path.display())]
    At { path: PathBuf, inner: Box<Error> },

    /// A line of a trace's event log that is not an event (not JSON, not an object, or
    /// without `t` and `event`).
    #[error("{}: line {line}: {error}", path.display())]
    EventLine {
        path: PathBuf,
        line: u64,
        error: serde_json::Error,
    },

    /// A line of a trace's event log longer than a reader accepts.
    #[error("{}: line {line} is longer than the limit of {limit} bytes", path.display())]
    EventLineTooLong {
        path: PathBuf,
        line: u64,
        limit: usize,
    },

    // ----- other crates' sources ------------------------------------------------------
    /// A replay source outside this crate (`roverlog-ros`'s `RosSource`) that failed: its
    /// own error, whose message is shown unchanged.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync + 'static>),

    // ----- gulp ------------------------------------------------------------------------
    /// A frame selection (`a:b:c`, `i,j,k`) that does not parse or does not fit a video.
    #[error("{0}")]
    FrameSelection(SelectionProblem),

    /// A frame selection that does not fit the video `id` of a GulpIO2 directory.
    #[error("{}: id {id:?}: {problem}", path.display())]
    BadFrames {
        path: PathBuf,
        id: String,
        problem: SelectionProblem,
    },

    /// A GulpIO2 directory that is inconsistent. (Boxed: its largest problem would make every
    /// `Result` of this crate larger, see `clippy::result_large_err`.)
    #[error("{}: {problem}", path.display())]
    Gulp {
        path: PathBuf,
        problem: Box<GulpProblem>,
    },

    // ----- zarr / codecs ---------------------------------------------------------------
    /// Zarr metadata or layout we cannot read.
    #[error("{}: {problem}", path.display())]
    Zarr { path: PathBuf, problem: ZarrProblem },

    /// A setting of the `.zarray` at `path` that we refuse (compressor, filter, dtype, fill).
    #[error("{}: {problem}", path.display())]
    ZarrSetting {
        path: PathBuf,
        problem: SettingProblem,
    },

    /// A JPEG frame that did not decode.
    #[error("jpeg: {0}")]
    Jpeg(JpegProblem),

    /// An Ouster `lidar.json` we refuse, or a depth frame that does not fit it; `path` is the
    /// `lidar.json`.
    #[error("{}: {problem}", path.display())]
    Lidar {
        path: PathBuf,
        problem: LidarProblem,
    },

    // ----- zarr chunks and settings (path-less: the caller names the file or chunk) ----
    /// A chunk that decoded to another size than its metadata gives.
    #[error("decoded to {got} bytes, expected {expected}")]
    DecodedSize { got: usize, expected: usize },

    /// A chunk whose stream goes on past the size its metadata gives.
    #[error("decodes to more than the expected {expected} bytes")]
    DecodesLonger { expected: usize },

    /// A decoding stream that failed (bad checksum, bad framing).
    #[error("corrupt stream: {0}")]
    CorruptStream(std::io::Error),

    /// Chunk bytes that contradict their codec's framing (header, size prefix, padding).
    #[error("{0}")]
    BadChunk(ChunkProblem),

    /// A compressor, filter, dtype or fill value in `.zarray` that we refuse.
    #[error("{0}")]
    BadSetting(SettingProblem),

    /// A chunk that did not decode: the codec, the chunk, and why (part of the message, not
    /// a `source`, as in [`Error::At`]).
    #[error("{codec}: {what}: {inner}")]
    Chunk {
        codec: String,
        what: String,
        inner: Box<Error>,
    },

    /// Timestamps a timestamp model cannot be applied to (not advancing, no period).
    #[error("timestamps: {0}")]
    Timestamps(TimestampsProblem),

    /// A timestamp model name that is not one of ours.
    #[error("unknown timestamp model {name:?} (raw, smooth, discretize)")]
    UnknownModel { name: String },

    // ----- configuration ---------------------------------------------------------------
    /// An option that is not valid (a copy's plan, a replay's sensors or frame rate).
    /// (Boxed, as [`Error::Gulp`].)
    #[error("config: {0}")]
    Config(Box<ConfigProblem>),
}

/// Why a timestamp model cannot be applied ([`Error::Timestamps`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimestampsProblem {
    /// The last timestamp is not after the first.
    #[error(
        "time does not advance from the first to the last of {samples} samples ({first} -> {last})"
    )]
    NotAdvancing {
        samples: usize,
        first: f64,
        last: f64,
    },
    /// A model interval that is not a positive number of seconds.
    #[error("interval must be a positive number of seconds, not {interval}")]
    Interval { interval: f64 },
    /// A median step between timestamps that is not positive.
    #[error("the median difference between timestamps is {step}: no period to count in")]
    NoPeriod { step: f64 },
}

/// What is wrong with one channel's description in `meta.json` ([`Error::InvalidChannel`]).
#[derive(Debug)]
pub enum ChannelSpecProblem {
    /// The description is not a JSON object.
    NotObject,
    /// A required member is absent or of the wrong JSON type (`expected`: "a string").
    Missing {
        key: &'static str,
        expected: &'static str,
    },
    /// An optional member of the wrong JSON type.
    NotA {
        key: &'static str,
        expected: &'static str,
    },
    /// A `type` we do not know ([`Error::InvalidType`]).
    Type(Box<Error>),
    /// A `shape` entry that is not a dimension (its JSON text).
    ShapeEntry(String),
}

impl std::fmt::Display for ChannelSpecProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChannelSpecProblem::NotObject => f.write_str("expected an object"),
            ChannelSpecProblem::Missing { key, expected } => {
                write!(f, "{key:?} missing or not {expected}")
            }
            ChannelSpecProblem::NotA { key, expected } => write!(f, "{key:?} is not {expected}"),
            ChannelSpecProblem::Type(e) => write!(f, "{e}"),
            ChannelSpecProblem::ShapeEntry(d) => {
                write!(f, "shape entry {d} is not a non-negative integer")
            }
        }
    }
}

/// Why a frame selection does not parse or does not fit a video ([`Error::FrameSelection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectionProblem {
    /// A part that is not an integer.
    NotInteger { part: String },
    /// More than three `:`-separated parts.
    SliceParts { spec: String },
    /// A slice written with step 0.
    ZeroStepIn { spec: String },
    /// An empty entry in an index list.
    EmptyIndex { spec: String },
    /// A video with more frames than an `i64` counts.
    TooManyFrames,
    /// A slice with step 0 (built in code, not parsed).
    ZeroStep,
    /// An index past either end of the video.
    IndexOutOfRange { index: i64, len: usize },
}

impl std::fmt::Display for SelectionProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SelectionProblem::NotInteger { part } => write!(f, "{part:?} is not an integer"),
            SelectionProblem::SliceParts { spec } => {
                write!(f, "{spec:?}: a slice is start:stop or start:stop:step")
            }
            SelectionProblem::ZeroStepIn { spec } => {
                write!(f, "{spec:?}: slice step cannot be zero")
            }
            SelectionProblem::EmptyIndex { spec } => write!(f, "{spec:?}: empty index"),
            SelectionProblem::TooManyFrames => f.write_str("too many frames"),
            SelectionProblem::ZeroStep => f.write_str("slice step cannot be zero"),
            SelectionProblem::IndexOutOfRange { index, len } => {
                write!(f, "frame index {index} out of range ({len} frames)")
            }
        }
    }
}

/// The AVI findings of [`Error::AviNeedsRecovery`] on one line.
fn join(problems: &[AviProblem]) -> String {
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.join("; ")
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            error,
        }
    }

    /// The operating system's error behind this one, if there is one (through the variants
    /// that hold another error as part of their message: [`Error::At`], [`Error::Chunk`]).
    /// None of them is a `source`; see [`Error::Io`].
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Io { error, .. } | Error::CorruptStream(error) => Some(error),
            Error::At { inner, .. } | Error::Chunk { inner, .. } => inner.io_error(),
            _ => None,
        }
    }

    /// Names the file a path-less error (such as [`Error::NotAvi`]) is about.
    pub fn at(path: impl Into<PathBuf>, source: Error) -> Self {
        Error::At {
            path: path.into(),
            inner: Box::new(source),
        }
    }

    /// A `Corrupt` error for `path`.
    pub fn corrupt(path: impl Into<PathBuf>, problem: CorruptProblem) -> Self {
        Error::Corrupt {
            path: path.into(),
            problem,
        }
    }
}

impl From<ConfigProblem> for Error {
    fn from(problem: ConfigProblem) -> Self {
        Error::Config(Box::new(problem))
    }
}

/// Adds the path to `std::io::Result`s (`.at(path)?`).
pub trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `Result` of the crate carries an `Error`: the large problems are boxed (see
    /// [`Error::Gulp`]) so that it stays as small as it was when the problems were strings
    /// (88 bytes on 64-bit targets; `clippy::result_large_err` warns from 128).
    #[test]
    fn an_error_stays_small() {
        assert!(
            std::mem::size_of::<Error>() <= 88,
            "Error is {} bytes: box the largest problem",
            std::mem::size_of::<Error>()
        );
    }
}
