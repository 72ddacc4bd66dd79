//! The crate's errors: [`Error`], what every operation returns, with what is wrong with a
//! ROS recording ([`RosProblem`]) or with one message in it ([`DecodeProblem`]) as values.
//! An error of core (I/O on a named file, a trace that cannot be written) passes through
//! unchanged ([`Error::Core`]), and every [`Error`] converts into core's (a [`RosSource`]
//! is a core replay source, whose methods return core's error).
//!
//! [`RosSource`]: crate::RosSource

use std::path::PathBuf;

pub use roverlog_core::error::IoContext;

mod decode;
mod skip;
#[cfg(test)]
mod tests;

pub use decode::{BadChar, DecodeProblem, SchemaProblem, WideProblem};
pub use skip::{MapError, NoWire, SkipReason};

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing ROS recordings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of core's (I/O on a named file, a trace that cannot be written), unchanged.
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),

    /// A ROS recording (MCAP file, ROS 1 bag, rosbag2 directory) that cannot be read: `path`
    /// is the file, `problem` what is wrong and where.
    #[error("{}: {problem}", path.display())]
    Ros { path: PathBuf, problem: RosProblem },

    /// A message of a ROS recording that does not decode against the schema stored with it:
    /// the file, the topic, the message's place in the topic, and why.
    #[error("{}: topic {topic}, message {index}: {problem}", path.display())]
    RosMessage {
        path: PathBuf,
        topic: String,
        index: u64,
        /// Boxed: the enum stays small for every other error.
        problem: Box<DecodeProblem>,
    },

    /// A message that mapped to channels when the recording was first read and does not
    /// now (the file changed under us): the file, the topic, the message, and why.
    #[error("{}: topic {topic}, message {index}: {problem} (it mapped when first read)", path.display())]
    MapsDifferently {
        path: PathBuf,
        topic: String,
        index: u64,
        /// Boxed: the enum stays small for every other error.
        problem: Box<MapError>,
    },

    /// A trace whose sensors cannot become a bag (`roverlog rosbag`): `path` is the sensor,
    /// channel or file, `problem` what is wrong with it.
    #[error("{}: {problem}", path.display())]
    Rosbag {
        path: PathBuf,
        /// Boxed: the enum stays small for every other error.
        problem: Box<RosbagProblem>,
    },

    /// A message that maps to other channels than when the recording was first read.
    #[error("{}: topic {topic}, message {index}: changed since it was first read", path.display())]
    ShapeChanged {
        path: PathBuf,
        topic: String,
        index: u64,
    },
}

impl From<Error> for roverlog_core::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Core(e) => e,
            other => roverlog_core::Error::Source(Box::new(other)),
        }
    }
}

/// Why a trace cannot become a bag (`roverlog rosbag`): [`super::Error::Rosbag`] carries it
/// with the sensor, channel or file it is about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RosbagProblem {
    /// The trace has no sensor of that name for the role (`lidar`, `imu`).
    #[error("no {role} sensor {name:?} (sensors: {})", sensors.join(", "))]
    NoSensor {
        role: &'static str,
        name: String,
        sensors: Vec<String>,
    },
    /// A channel the message needs is absent.
    #[error("no such channel")]
    NoChannel,
    /// A channel of another type or shape than the message needs.
    #[error("is {} {:?}, expected {} {:?}", dtype.code(), shape, want.iter().map(|d| d.code()).collect::<Vec<_>>().join(" or "), want_shape)]
    Channel {
        dtype: roverlog_core::format::DType,
        shape: Vec<usize>,
        want: Vec<roverlog_core::format::DType>,
        want_shape: Vec<usize>,
    },
    /// The lidar's `lidar.json` is not there.
    #[error("missing: the lidar's intrinsics (the collector saves the sensor's metadata there)")]
    NoIntrinsics,
    /// A sample whose time is before 1970 (a bag's time is unsigned).
    #[error("sample {index}: time {sec} s is before 1970")]
    BeforeEpoch { index: usize, sec: i64 },
    /// A time a header stamp cannot hold.
    #[error("{0}")]
    Stamp(StampRange),
    /// The output exists already.
    #[error("already exists (refusing to overwrite it)")]
    Exists,
    /// A worker thread stopped before giving frame `frame`.
    #[error("frame {frame}: the reader thread stopped")]
    WorkerStopped { frame: usize },
}

/// Why a ROS recording (an MCAP file, a ROS 1 bag, a rosbag2 directory) cannot be read. Every
/// variant that is about a place in a file carries its byte offset (`at`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RosProblem {
    /// The file does not start with the magic of the container it claims to be.
    #[error("not {expected}: the file does not start with its magic bytes")]
    BadMagic { expected: &'static str },
    /// The file ends inside a record (a recording cut short or a partial copy).
    #[error("truncated: {what} at byte {at} needs {need} bytes, the file ends {left} bytes on")]
    Truncated {
        what: &'static str,
        at: u64,
        need: u64,
        left: u64,
    },
    /// A record, chunk or header larger than we accept (checked before allocating).
    #[error("{what} at byte {at} is {got} bytes, over the limit of {limit}")]
    TooLarge {
        what: &'static str,
        at: u64,
        got: u64,
        limit: u64,
    },
    /// A record whose fields do not parse or contradict each other.
    #[error("{what} at byte {at}: {problem}")]
    BadRecord {
        what: &'static str,
        at: u64,
        problem: RecordProblem,
    },
    /// A chunk compressed with something we do not decode.
    #[error("chunk at byte {at}: unsupported compression {name:?} (we read none, zstd, lz4, bz2)")]
    Compression { at: u64, name: String },
    /// A chunk whose `codec` (zstd, lz4, bz2) refused its bytes: the codec's own words.
    #[error("chunk at byte {at}: {codec}: {error}")]
    Decompress {
        at: u64,
        codec: &'static str,
        error: String,
    },
    /// A zstd chunk that decompresses to more than the `want` bytes its header says.
    #[error(
        "chunk at byte {at}: zstd: decompresses to more than the {want} bytes its header says"
    )]
    DecompressesLonger { at: u64, want: usize },
    /// A chunk that decompresses to `got` bytes, not the `want` its header says.
    #[error("chunk at byte {at}: decompressed to {got} bytes, its header says {want}")]
    DecompressedSize { at: u64, got: usize, want: usize },
    /// A chunk whose records' CRC32 is `got`, not the `want` its header says.
    #[error(
        "chunk at byte {at}: CRC32 of the records is {got:#010x}, its header says {want:#010x}"
    )]
    ChunkCrc { at: u64, got: u32, want: u32 },
    /// A message naming a channel (MCAP) or connection (ROS 1) never defined before it.
    #[error("message at byte {at} names channel/connection {id}, which was never defined")]
    UnknownChannel { at: u64, id: u32 },
    /// A rosbag2 `metadata.yaml` we cannot use.
    #[error("metadata.yaml: {0}")]
    Metadata(MetadataProblem),
    /// A storage plugin of a rosbag2 directory we do not read.
    #[error("storage {name:?} is not supported (this build reads mcap{})", if cfg!(feature = "sqlite") { " and sqlite3" } else { "" })]
    Storage { name: String },
    /// A message encoding (MCAP channel `message_encoding`) we do not decode.
    #[error("topic {topic}: message encoding {encoding:?} is not ROS (cdr or ros1)")]
    Encoding { topic: String, encoding: String },
    /// A mapping file (`--map`) rule we cannot follow: the topic it is about (empty for the
    /// whole file) and why.
    #[error("mapping file, topic {topic:?}: {problem}")]
    Mapping {
        topic: String,
        problem: MappingProblem,
    },
    /// Something the SQLite storage refused (rosbag2 `.db3`): rusqlite's own words.
    #[error("sqlite: {error}")]
    Sqlite { error: String },
    /// A message row of the SQLite storage that was listed and is gone when read.
    #[error("sqlite: message row {id} is gone")]
    SqliteRowGone { id: i64 },
    /// A file rosbag2 compressed whole (`compression_mode: file`) that zstd does not
    /// decompress after `written` bytes: zstd's own words.
    #[error("compressed file (compression_mode: file): zstd: {error} after {written} bytes decompressed")]
    CompressedFile { written: u64, error: String },
    /// A file compressed whole that ends inside its zstd frame (zstd's words for it).
    #[error("compressed file (compression_mode: file): truncated: the file ends inside its zstd frame ({error}) after {written} bytes decompressed")]
    CompressedFileCut { written: u64, error: String },
    /// A file compressed whole that decompresses to nothing.
    #[error(
        "compressed file (compression_mode: file): it holds no data after 0 bytes decompressed"
    )]
    CompressedFileEmpty,
}

/// What is wrong inside one record of a container (MCAP or ROS 1 bag).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordProblem {
    /// A record inside a chunk cut short (`pos` is its offset among the chunk's records).
    #[error("a record at byte {pos} of its records needs {need} bytes, {left} are left")]
    InnerTruncated { pos: usize, need: u64, left: u64 },
    #[error("topic {topic} names schema {schema}, never defined")]
    UndefinedSchema { topic: String, schema: u16 },
    #[error("a field of {len} bytes runs past the record's end ({left} left)")]
    FieldPastEnd { len: u64, left: usize },
    #[error("a string that is not UTF-8")]
    NotUtf8,
    #[error("a header field's length is cut off")]
    FieldLengthCut,
    #[error("a header field runs past the header")]
    FieldPastHeader,
    #[error("a header field without '='")]
    NoEquals,
    #[error("a header field name that is not UTF-8")]
    FieldNameNotUtf8,
    #[error("no one-byte op field")]
    NoOp,
    #[error("no 8-byte time field")]
    NoTime,
    #[error("no 4-byte {name} field")]
    NoU32 { name: String },
    #[error("no {name} field")]
    NoField { name: String },
}

/// Why a mapping file (`--map`) rule cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MappingProblem {
    #[error("the file is not a JSON object of topics")]
    NotAnObject,
    #[error("must be \"skip\" or an object (sensor, channels, images, stamp)")]
    BadRule,
    #[error("{key} must be a string")]
    NotAString { key: String },
    /// A sensor or channel name that cannot be one (`kind`: `sensor`, `channel`).
    #[error("invalid {kind} name {name:?}: {reason}")]
    BadName {
        kind: &'static str,
        name: String,
        reason: &'static str,
    },
    #[error("images {got:?} (jpg or mjpg)")]
    Images { got: String },
    #[error("stamp {got:?} (header or log)")]
    Stamp { got: String },
    #[error("channels must be an object of names")]
    ChannelsNotAnObject,
    #[error("channels.{from} must be a string")]
    ChannelNotAString { from: String },
    #[error("a channel cannot be named ts")]
    ChannelNamedTs,
    #[error("unknown key {key:?} (sensor, channels, images, stamp)")]
    UnknownKey { key: String },
    #[error("sensor {sensor:?} is given to two topics")]
    SensorTwice { sensor: String },
    #[error("the recording has no such topic")]
    NoSuchTopic,
    #[error("no channel {from:?} to rename (it has {})", has.join(", "))]
    NoSuchChannel { from: String, has: Vec<String> },
    #[error("two channels would be named {to:?}")]
    ChannelTwice { to: String },
}

impl MappingProblem {
    /// A name core's `validate_name` refused.
    pub fn bad_name(e: roverlog_core::Error) -> MappingProblem {
        match e {
            roverlog_core::Error::InvalidName { kind, name, reason } => {
                MappingProblem::BadName { kind, name, reason }
            }
            other => MappingProblem::BadName {
                kind: "",
                name: other.to_string(),
                reason: "not a valid name",
            },
        }
    }
}

/// What is wrong with a rosbag2 directory's `metadata.yaml` (or the files it lists).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataProblem {
    #[error("{len} bytes, over the limit of {limit}")]
    TooLarge { len: u64, limit: u64 },
    #[error("no storage_identifier")]
    NoStorage,
    #[error("relative_file_paths: unclosed [")]
    Unclosed,
    #[error("compression_mode {mode:?} is not one rosbag2 writes (FILE, MESSAGE or none)")]
    Mode { mode: String },
    #[error("compression_format {format:?} is not supported (we read zstd, the only compressor rosbag2 ships)")]
    Format { format: String },
    #[error("file {file:?} is outside the directory")]
    Outside { file: String },
    #[error("lists {file:?}, which is not in the directory")]
    Missing { file: String },
    #[error("relative_file_paths lists no file")]
    NoFiles,
    #[error("more than 65535 files")]
    TooManyFiles,
}

/// A value that does not fit the message's field (a stamp before 1970 or past 2106).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("time {sec} s does not fit the {field} of a header stamp")]
pub struct StampRange {
    pub sec: i64,
    pub field: &'static str,
}
