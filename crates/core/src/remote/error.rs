//! What reading a trace in place can fail on, each naming the file (its location and path).

/// Why a sample or a trace could not be read in place.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The backend failed (the store's error names its bucket, endpoint and key).
    #[error("{location}: {error}")]
    Backend {
        location: String,
        error: super::BackendError,
    },
    #[error("{location}: no trace there (no config.yaml and no sensor directory with meta.json)")]
    NoTrace { location: String },
    #[error("{location}: no sensor {sensor:?} (sensors: {known})")]
    NoSensor {
        location: String,
        sensor: String,
        known: String,
    },
    #[error("{location}/{sensor}: no channel {channel:?} in meta.json")]
    NoChannel {
        location: String,
        sensor: String,
        channel: String,
    },
    #[error("{file}: {got} bytes, over the {limit}-byte limit for a {what}")]
    TooLarge {
        file: String,
        what: &'static str,
        got: u64,
        limit: u64,
    },
    #[error("{file}: channel format {format:?} is not read in place")]
    UnsupportedFormat { file: String, format: String },
    #[error("{file}: sample {index} is past the end ({len} samples)")]
    PastEnd { file: String, index: u64, len: u64 },
    #[error("{file}: sample {index} is damaged: {damage}")]
    Damaged {
        file: String,
        index: u64,
        damage: FrameDamage,
    },
    /// What the format's own parser said (meta.json, an AVI header, an `.xz` stream).
    #[error("{0}")]
    Format(crate::Error),
}

/// What is wrong with one sample read in place.
#[derive(Debug, thiserror::Error)]
pub enum FrameDamage {
    #[error(
        "its index entries {start}..{end} are out of order or past the data ({data_len} bytes)"
    )]
    BadIndex { start: u64, end: u64, data_len: u64 },
    #[error("the chunk at byte {offset} is not the frame idx1 lists ({len} bytes)")]
    ChunkMismatch { offset: u64, len: u32 },
    #[error("the sensor's ts counts it, but the channel holds only {held} samples")]
    NotHeld { held: u64 },
    #[error("its file {name} is missing")]
    MissingFile { name: String },
    #[error("{0}")]
    Undecodable(crate::Error),
    #[error("it decompresses to {got} bytes, expected {expected}")]
    WrongSize { got: usize, expected: usize },
}
