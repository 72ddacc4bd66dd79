//! Why a topic is not imported ([`SkipReason`], shown to users as `import_skipped` events and
//! in `import`'s summary) and why one message does not map to channels ([`MapError`]), as
//! values. The texts are the ones users have always read.

use roverlog_core::format::DType;

use super::DecodeProblem;

/// Why a topic of a recording is left out of an import.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SkipReason {
    /// The mapping file (`--map`) says `"skip"` for it.
    #[error("left out by the mapping file")]
    LeftOut,
    /// Its connections (in several files of a rosbag2 directory) disagree on its type.
    #[error("its type changes from {from} to {to}")]
    TypeChanges { from: String, to: String },
    /// The container gives no way to decode its messages.
    #[error("{0}")]
    Wire(NoWire),
    /// Its schema text does not parse.
    #[error("{0}")]
    Schema(DecodeProblem),
    /// Message `index` does not decode against the schema.
    #[error("message {index} does not decode: {problem}")]
    Decode { index: u64, problem: DecodeProblem },
    /// Message `index` decodes but does not map to channels.
    #[error("message {index}: {problem}")]
    Map { index: u64, problem: MapError },
    /// Message `index` maps to other channels than the topic's first.
    #[error("message {index} changes shape: {problem}")]
    ChangesShape { index: u64, problem: MapError },
    /// Not one message on the topic.
    #[error("no messages")]
    NoMessages,
    /// A point cloud topic that cannot be padded to its widest cloud.
    #[error("{0}")]
    Padding(MapError),
}

/// Why one message does not map to channels, or does not map as the topic's first did.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    #[error("no field {path}")]
    NoField { path: String },
    #[error("field {path} is not a number")]
    NotNumber { path: String },
    #[error("field {path} is not an unsigned integer")]
    NotUnsigned { path: String },
    #[error("field {path} is not a byte array")]
    NotBytes { path: String },
    #[error("field {path} is not a string")]
    NotString { path: String },
    #[error("{name} is not numbers")]
    NotNumbers { name: &'static str },
    #[error("position_covariance is not 9 numbers")]
    Covariance,
    /// A field name that cannot be a channel's name.
    #[error("invalid channel name {name:?}: {reason}")]
    ChannelName { name: String, reason: &'static str },
    #[error("field {path} is a sequence of {what}, which we do not map to channels")]
    Sequence { path: String, what: &'static str },
    #[error("no numeric fields to store")]
    NoNumericFields,

    // ----- images ------------------------------------------------------------------
    #[error("an empty compressed image")]
    EmptyImage,
    #[error("compressed image format {format:?}: only JPEG is imported")]
    NotJpeg { format: String },
    #[error("image encoding {encoding:?} is not imported")]
    ImageEncoding { encoding: String },
    #[error("image width overflows")]
    ImageWidth,
    #[error("image {w}x{h} {encoding} has no pixels")]
    NoPixels {
        w: usize,
        h: usize,
        encoding: String,
    },
    #[error("image {w}x{h} {encoding} with step {step} needs more than its {len} bytes")]
    ImageShort {
        w: usize,
        h: usize,
        encoding: String,
        step: usize,
        len: usize,
    },

    // ----- point clouds ------------------------------------------------------------
    #[error("fields is not a list")]
    FieldsNotList,
    #[error("point count overflows")]
    PointCount,
    #[error("{w}x{h} points with row_step {row_step} need more than its {len} bytes")]
    RowsShort {
        w: usize,
        h: usize,
        row_step: usize,
        len: usize,
    },
    #[error("{w}x{h} points of {point_step} bytes need more than its {len} bytes (rows overlap: row_step {row_step})")]
    RowsOverlap {
        w: usize,
        h: usize,
        point_step: usize,
        row_step: usize,
        len: usize,
    },
    #[error("point field {name}: datatype {datatype} is not a PointField type")]
    PointDatatype { name: String, datatype: usize },
    #[error("point field {name} (offset {offset}, {count} x {size} bytes) is past point_step {point_step}")]
    FieldPastStep {
        name: String,
        offset: usize,
        count: usize,
        size: usize,
        point_step: usize,
    },
    #[error("point fields overlap: {bytes} bytes of fields up to {name} in a point_step of {point_step}")]
    FieldsOverlap {
        bytes: usize,
        name: String,
        point_step: usize,
    },
    #[error("point field {name} twice")]
    FieldTwice { name: String },
    #[error("point ({row}, {col}) is past the data")]
    PointPastData { row: usize, col: usize },
    #[error("a point cloud without fields")]
    NoPointFields,

    // ----- a message against the topic's first -------------------------------------
    #[error("channels [{}] instead of [{}]", got.join(", "), want.join(", "))]
    Channels { got: Vec<String>, want: Vec<String> },
    #[error("channel {name} is {} {:?} instead of {} {:?}", got.0.code(), got.1, want.0.code(), want.1)]
    Channel {
        name: String,
        got: (DType, Vec<usize>),
        want: (DType, Vec<usize>),
    },
    #[error("{w}x{h} points instead of {w0}x{h0}: only an unorganized cloud (height 1) may change its width")]
    CloudShape {
        w: usize,
        h: usize,
        w0: usize,
        h0: usize,
    },
    #[error("point fields [{}] instead of [{}]", got.join(", "), want.join(", "))]
    PointFields { got: Vec<String>, want: Vec<String> },
    /// A point field whose type or count changed: `got` and `want` as `f4` or `f4 x3`.
    #[error(
        "point field {name} is {} instead of {}",
        per_point(got),
        per_point(want)
    )]
    PointField {
        name: String,
        got: (DType, Option<usize>),
        want: (DType, Option<usize>),
    },

    // ----- padding clouds to the widest -----------------------------------------------
    #[error("its widest cloud ({max} points of {point} bytes) would pad every sample past {limit_mib} MiB")]
    PaddedTooLarge {
        max: usize,
        point: usize,
        limit_mib: usize,
    },
    #[error("{width} points, more than the {max} the topic was padded to")]
    WiderThanPadded { width: usize, max: usize },
    #[error("{width} points")]
    TooManyPoints { width: usize },
    #[error("point field {name}: {len} bytes for {width} points")]
    FieldLength {
        name: String,
        len: usize,
        width: usize,
    },
    #[error("not an unorganized point cloud")]
    NotUnorganized,
}

fn per_point((dtype, count): &(DType, Option<usize>)) -> String {
    match count {
        Some(count) => format!("{} x{count}", dtype.code()),
        None => dtype.code().to_string(),
    }
}

/// Why a connection's messages cannot be decoded (the topic is skipped with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoWire {
    #[error("the channel has no schema")]
    NoSchema,
    #[error("message encoding {message:?} with schema encoding {schema:?} (we decode cdr/ros2msg and ros1/ros1msg)")]
    Encodings { message: String, schema: String },
    #[error("the connection names no message type")]
    NoType,
    #[error("its definition is {encoding:?} (we read ros2msg)")]
    DefinitionEncoding { encoding: String },
    /// A type a pre-Iron `.db3` stores no definition for, and none of those we know
    /// (`known`).
    #[error("the recording stores no message definition for its type (rosbag2 sqlite3 before Iron), and it is not one of the standard messages roverlog knows ({})", known.join(", "))]
    NoDefinition { known: Vec<&'static str> },
    #[error("serialization format {format:?} is not cdr")]
    Serialization { format: String },
}
