//! What is wrong with a sensor's `meta.json` ([`super::Error::InvalidMeta`]), or with a
//! sample's timestamp that a writer refuses, as values. Beside the error type, below
//! `format::meta` and the sensor writer, which produce them; each variant's `Display` is the
//! message users read after the file's path. It imports nothing of the crate (a dtype or a
//! format is kept as its `meta.json` text), so `error` never imports `format` back.

use std::fmt;

/// Why a `meta.json` (or the channels asked of a sensor) is not valid.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MetaProblem {
    /// The document is not a JSON object.
    NotObject,
    /// More channels than a sensor may have.
    TooManyChannels { channels: usize, limit: usize },
    /// A channel or sensor name that cannot be used (as [`super::Error::InvalidName`]).
    Name {
        kind: &'static str,
        name: String,
        reason: &'static str,
    },
    /// A channel name given twice.
    DeclaredTwice { channel: String },
    /// A shape with more dimensions than a channel may have.
    TooManyDims {
        channel: String,
        ndim: usize,
        limit: usize,
    },
    /// A fixed-size channel whose sample is empty or over `limit` bytes (`dtype`: its type
    /// code).
    SampleBytes {
        channel: String,
        shape: Vec<usize>,
        dtype: &'static str,
        limit: usize,
    },
    /// A `ts` channel other than raw f8 of shape `[]` (`format`, `dtype`: as `meta.json`
    /// spells them).
    TsChannel {
        format: String,
        dtype: &'static str,
        shape: Vec<usize>,
    },
    /// A channel named like the `_i` offset index of an `lzmaf` channel.
    IndexCollision { index: String, channel: String },
    /// A sensor reopened to append with other channels than its `meta.json` holds.
    ChannelsDiffer,
    /// A sample's timestamp that is NaN or infinite.
    TimeNotFinite { ts: f64 },
}

impl fmt::Display for MetaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use MetaProblem as P;
        match self {
            P::NotObject => f.write_str("expected a JSON object of channels"),
            P::TooManyChannels { channels, limit } => {
                write!(f, "{channels} channels, over the limit of {limit}")
            }
            P::Name { kind, name, reason } => write!(f, "invalid {kind} name {name:?}: {reason}"),
            P::DeclaredTwice { channel } => write!(f, "channel {channel:?} declared twice"),
            P::TooManyDims {
                channel,
                ndim,
                limit,
            } => write!(
                f,
                "channel {channel:?}: shape has {ndim} dimensions, over the limit of {limit}"
            ),
            P::SampleBytes {
                channel,
                shape,
                dtype,
                limit,
            } => write!(
                f,
                "channel {channel:?}: shape {shape:?} of {dtype} gives an empty sample or one over {limit} bytes"
            ),
            P::TsChannel {
                format,
                dtype,
                shape,
            } => write!(
                f,
                "channel \"ts\" must be raw f8 with shape [], found {format} {dtype} {shape:?}"
            ),
            P::IndexCollision { index, channel } => write!(
                f,
                "channel {index:?} collides with the offset index of lzmaf channel {channel:?}"
            ),
            P::ChannelsDiffer => f.write_str("the channels on disk differ from the ones requested"),
            P::TimeNotFinite { ts } => write!(f, "timestamp {ts} is not finite"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// The messages users and tests read, exactly as they were when they were free text
    /// (the old format strings, filled with the same values).
    #[test]
    fn messages_are_the_ones_users_read() {
        let (name, index, limit) = ("x", "x_i", 4096usize);
        let shape: Vec<usize> = vec![0, 3];
        for (problem, want) in [
            (
                MetaProblem::NotObject,
                "expected a JSON object of channels".to_string(),
            ),
            (
                MetaProblem::TooManyChannels {
                    channels: 300,
                    limit: 256,
                },
                format!("{} channels, over the limit of {}", 300, 256),
            ),
            (
                MetaProblem::Name {
                    kind: "channel",
                    name: "a/b".into(),
                    reason: "contains a path separator",
                },
                Error::InvalidName {
                    kind: "channel",
                    name: "a/b".into(),
                    reason: "contains a path separator",
                }
                .to_string(),
            ),
            (
                MetaProblem::DeclaredTwice {
                    channel: name.into(),
                },
                format!("channel {name:?} declared twice"),
            ),
            (
                MetaProblem::TooManyDims {
                    channel: name.into(),
                    ndim: 40,
                    limit: 32,
                },
                format!(
                    "channel {name:?}: shape has {} dimensions, over the limit of {}",
                    40, 32
                ),
            ),
            (
                MetaProblem::SampleBytes {
                    channel: name.into(),
                    shape: shape.clone(),
                    dtype: "f4",
                    limit,
                },
                format!(
                    "channel {name:?}: shape {:?} of {} gives an empty sample or one over {limit} bytes",
                    shape, "f4"
                ),
            ),
            (
                MetaProblem::TsChannel {
                    format: "lzma".into(),
                    dtype: "f8",
                    shape: vec![2],
                },
                format!(
                    "channel \"ts\" must be raw f8 with shape [], found {} {} {:?}",
                    "lzma",
                    "f8",
                    vec![2usize]
                ),
            ),
            (
                MetaProblem::IndexCollision {
                    index: index.into(),
                    channel: name.into(),
                },
                format!(
                    "channel {index:?} collides with the offset index of lzmaf channel {name:?}"
                ),
            ),
            (
                MetaProblem::ChannelsDiffer,
                "the channels on disk differ from the ones requested".into(),
            ),
            (
                MetaProblem::TimeNotFinite { ts: f64::NAN },
                format!("timestamp {} is not finite", f64::NAN),
            ),
        ] {
            let e = Error::InvalidMeta {
                path: "s/meta.json".into(),
                problem: Box::new(problem),
            };
            assert_eq!(e.to_string(), format!("s/meta.json: {want}"));
        }
    }
}
