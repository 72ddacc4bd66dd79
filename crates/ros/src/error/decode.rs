//! Why a message does not decode against its schema, or a schema text does not parse.

/// Why a line of a `.msg` definition does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaProblem {
    #[error("a separator line with no type after it")]
    NoTypeAfterSeparator,
    #[error("expected \"MSG: pkg/Type\", got {got:?}")]
    BadSection { got: String },
    #[error("more than {limit} types")]
    TooManyTypes { limit: usize },
    #[error("more than {limit} fields")]
    TooManyFields { limit: usize },
    #[error("field {name:?} twice")]
    FieldTwice { name: String },
    #[error("{text:?} is a type without a field name")]
    NoFieldName { text: String },
    #[error("{name:?} is not a field name")]
    BadFieldName { name: String },
    #[error("{ty:?}: unclosed array bracket")]
    UnclosedBracket { ty: String },
    #[error("{ty:?}: fixed array over the limit of {limit}")]
    FixedTooLong { ty: String, limit: usize },
    #[error("{ty:?}: ROS 1 has no wide strings (wstring is a ROS 2 type)")]
    Ros1Wide { ty: String },
    #[error("{name:?} is not a type")]
    NotAType { name: String },
    #[error("{ty:?}: {len:?} is not an array length")]
    BadLength { ty: String, len: String },
}

/// Why a `wstring` does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WideProblem {
    #[error("ROS 1 has no wide strings")]
    Ros1,
    /// A character that is not one, read with `read_as` (`4-byte characters`).
    #[error("{char} (read as {read_as})")]
    Char {
        char: BadChar,
        read_as: &'static str,
    },
}

/// A `wstring` character that is not one: its place in the string and its code unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadChar {
    #[error("character {index} is {unit:#06x}, a high surrogate without its low one")]
    HighSurrogate { index: usize, unit: u32 },
    #[error("character {index} is {unit:#06x}, a low surrogate without its high one")]
    LowSurrogate { index: usize, unit: u32 },
    #[error("character {index} is {unit:#x}, beyond Unicode")]
    BeyondUnicode { index: usize, unit: u32 },
}

/// Why one message did not decode against its schema, or why a schema text does not parse.
/// `at` is a byte offset in the message (or a line in the schema text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeProblem {
    /// The message ends before a field: `need` bytes at `at`, `left` remain.
    #[error("message ends inside {what} at byte {at} (needs {need}, {left} left)")]
    Truncated {
        what: String,
        at: usize,
        need: usize,
        left: usize,
    },
    /// A string or sequence length over its limit (or over what the message could hold).
    #[error("{what} at byte {at} declares {got} {unit}, over the limit of {limit}")]
    TooLong {
        what: String,
        at: usize,
        got: u64,
        limit: u64,
        unit: &'static str,
    },
    /// A CDR encapsulation header we do not decode (we read CDR_LE and CDR_BE, plain CDR).
    #[error(
        "CDR encapsulation {0:#06x} is not plain CDR (0x0000 big-endian, 0x0001 little-endian)"
    )]
    Encapsulation(u16),
    /// Messages nested deeper than the limit.
    #[error("messages nested deeper than {0}")]
    TooDeep(usize),
    /// A schema line that does not parse.
    #[error("schema of {type_name}, line {line}: {problem}")]
    Schema {
        type_name: String,
        line: usize,
        problem: SchemaProblem,
    },
    /// A field type the schema never defines.
    #[error("schema of {type_name}: type {missing:?} is used but not defined")]
    MissingType { type_name: String, missing: String },
    /// A type that contains itself (ROS forbids it; it would not end).
    #[error("schema of {type_name}: type {cycle:?} contains itself")]
    Recursive { type_name: String, cycle: String },
    /// Bytes left after the last field (the schema does not describe this message).
    #[error("{left} bytes left after the last field (the schema does not fit the message)")]
    Trailing { left: usize },
    /// A `wstring` whose characters are not text (an unpaired UTF-16 surrogate, a value past
    /// U+10FFFF), or one in a ROS 1 message (which has none).
    #[error("wstring {field} at byte {at}: {problem}")]
    BadWide {
        field: String,
        at: usize,
        problem: WideProblem,
    },
    /// A message with a non-empty `wstring` that decodes with neither 4-byte nor 2-byte
    /// characters (the two forms ROS 2 writers use; see `ros::wide`): `field` is the first
    /// non-empty wstring, `four` and `two` why each form failed.
    #[error("wstring {field}: the message decodes neither with 4-byte characters ({four}) nor with 2-byte ones ({two})")]
    WideForm {
        field: String,
        four: Box<DecodeProblem>,
        two: Box<DecodeProblem>,
    },
    /// A message of a rosbag2 recording compressed per message (`compression_mode: message`)
    /// whose zstd frame of `frame_len` bytes does not decompress: zstd's own words.
    #[error("its zstd frame (compression_mode: message) does not decompress: zstd: {error} ({frame_len} bytes of frame)")]
    Frame { error: String, frame_len: usize },
    /// A message compressed per message whose zstd frame decompresses to more than `limit`.
    #[error("its zstd frame (compression_mode: message) does not decompress: it decompresses to more than the limit of {limit} bytes")]
    FrameTooLarge { limit: u64 },
}
