//! Why a hello or a frame is refused. Each value's text is the `error` of the line the daemon
//! answers with before it closes the connection (docs/protocol.md 6): drivers and their users
//! read it, so the wording is part of the protocol and changes only with it.

use std::fmt;

use super::PROTOCOL_VERSION;

/// A hello line the daemon refuses.
#[derive(Debug)]
pub enum HelloError {
    NotJson(serde_json::Error),
    NotObject,
    UnknownKey(String),
    /// `roverlog` is missing or not [`PROTOCOL_VERSION`].
    Version,
    NoSensor,
    /// The sensor name is not usable as a directory name.
    SensorName(roverlog_core::Error),
    Seq,
    /// An opt-in flag (`final_ack`, `dedup`) that is not a boolean.
    NotBool(&'static str),
    /// `dedup` without `seq`: repeats are recognised by their sequence numbers.
    DedupWithoutSeq,
    NoChannels,
    EmptyChannels,
    TooManyChannels {
        count: usize,
        max: usize,
    },
    /// Channel `index` (0-based, as listed in the hello) is not valid.
    Channel {
        index: usize,
        problem: ChannelError,
    },
    /// The channels are each valid but not together (duplicate names, empty samples).
    Channels(roverlog_core::Error),
    /// The opt-in `files` (docs/protocol.md 2.6) is not valid.
    Files(super::FileError),
    /// Even the smallest frame the hello allows is over the daemon's frame limit, so every
    /// frame would be refused.
    FrameTooLarge {
        sensor: String,
        min_len: usize,
        max_frame_bytes: u32,
    },
}

impl fmt::Display for HelloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HelloError::NotJson(e) => write!(f, "hello is not valid JSON: {e}"),
            HelloError::NotObject => write!(f, "hello must be a JSON object"),
            HelloError::UnknownKey(k) => write!(
                f,
                "hello: unknown key {k:?} (expected roverlog, sensor, channels, seq, final_ack, dedup, files)"
            ),
            HelloError::Version => write!(
                f,
                "hello: \"roverlog\" must be the protocol version {PROTOCOL_VERSION}"
            ),
            HelloError::NoSensor => write!(f, "hello: \"sensor\" missing or not a string"),
            HelloError::SensorName(e) | HelloError::Channels(e) => write!(f, "hello: {e}"),
            HelloError::Seq => write!(f, "hello: \"seq\" must be true or false"),
            HelloError::NotBool(k) => write!(f, "hello: {k:?} must be true or false"),
            HelloError::DedupWithoutSeq => write!(
                f,
                "hello: \"dedup\" needs \"seq\": true (repeats are recognised by sequence number)"
            ),
            HelloError::NoChannels => write!(f, "hello: \"channels\" missing or not a list"),
            HelloError::EmptyChannels => write!(f, "hello: \"channels\" is empty"),
            HelloError::TooManyChannels { count, max } => {
                write!(f, "hello: {count} channels, over max_channels {max}")
            }
            HelloError::Channel { index, problem } => {
                write!(f, "hello: channel {index}: {problem}")
            }
            HelloError::Files(e) => write!(f, "hello: {e}"),
            HelloError::FrameTooLarge {
                sensor,
                min_len,
                max_frame_bytes,
            } => write!(
                f,
                "hello: the smallest frame of sensor {sensor:?} is {min_len} bytes, over max_frame_bytes {max_frame_bytes}"
            ),
        }
    }
}

impl std::error::Error for HelloError {}

/// One channel of a hello that the daemon refuses ([`HelloError::Channel`]).
#[derive(Debug)]
pub enum ChannelError {
    NotObject,
    UnknownKey(String),
    /// A key that must be a string (`name`, `format`, `type`) is missing or is not one.
    NotString(&'static str),
    TsDeclared,
    Name(roverlog_core::Error),
    /// A format the daemon stores but cannot receive (`lzma`, `blosc`, ...).
    NotIngestible {
        name: String,
        format: String,
    },
    Type {
        name: String,
        source: roverlog_core::Error,
    },
    BadShape {
        name: String,
    },
    NoShape {
        name: String,
    },
    BadDesc {
        name: String,
    },
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelError::NotObject => write!(f, "expected an object"),
            ChannelError::UnknownKey(k) => write!(
                f,
                "unknown key {k:?} (expected name, format, type, shape, desc)"
            ),
            ChannelError::NotString(k) => write!(f, "\"{k}\" missing or not a string"),
            ChannelError::TsDeclared => write!(f, "\"ts\" is implicit and may not be declared"),
            ChannelError::Name(e) => write!(f, "{e}"),
            ChannelError::NotIngestible { name, format } => write!(
                f,
                "{name:?}: format {format:?} cannot be ingested (raw, lzmaf, jpg, npz, mjpg)"
            ),
            ChannelError::Type { name, source } => write!(f, "{name:?}: {source}"),
            ChannelError::BadShape { name } => {
                write!(f, "{name:?}: shape entries must be non-negative integers")
            }
            ChannelError::NoShape { name } => {
                write!(f, "{name:?}: \"shape\" missing or not a list")
            }
            ChannelError::BadDesc { name } => write!(f, "{name:?}: \"desc\" is not a string"),
        }
    }
}

impl std::error::Error for ChannelError {}

/// A frame the daemon refuses: frame `frame` (0-based, per connection) and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameError {
    pub frame: u64,
    pub problem: FrameProblem,
}

/// What is wrong with a frame ([`FrameError`]); `channel` counts data channels.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameProblem {
    OverLimit {
        len: u32,
        max_frame_bytes: u32,
    },
    Short {
        len: usize,
        min_len: usize,
    },
    Timestamp(f64),
    LengthWordPastEnd {
        channel: usize,
    },
    EmptySample {
        channel: usize,
    },
    PastEnd {
        channel: usize,
        needs: usize,
        left: usize,
    },
    Trailing {
        bytes: usize,
        len: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.frame;
        match &self.problem {
            FrameProblem::OverLimit {
                len,
                max_frame_bytes,
            } => write!(f, "frame {n}: len {len} is over max_frame_bytes {max_frame_bytes}"),
            FrameProblem::Short { len, min_len } => write!(
                f,
                "frame {n}: len {len} is shorter than the smallest valid frame ({min_len} bytes)"
            ),
            FrameProblem::Timestamp(ts) => write!(f, "frame {n}: timestamp {ts} is not finite"),
            FrameProblem::LengthWordPastEnd { channel } => write!(
                f,
                "frame {n}: channel {channel}: length word past the end of the frame"
            ),
            FrameProblem::EmptySample { channel } => write!(
                f,
                "frame {n}: channel {channel}: empty sample (jpg/npz samples need at least one byte)"
            ),
            FrameProblem::PastEnd {
                channel,
                needs,
                left,
            } => write!(
                f,
                "frame {n}: channel {channel}: needs {needs} bytes, only {left} left in the frame"
            ),
            FrameProblem::Trailing { bytes, len } => write!(
                f,
                "frame {n}: {bytes} bytes after the last channel (len {len} does not match the channels)"
            ),
        }
    }
}

impl std::error::Error for FrameError {}
