//! Bytes on disk that contradict the format ([`super::Error::Corrupt`]), as values: the
//! offsets, sizes, counts and findings involved. Beside the error type, below the channel
//! writers and readers (`avi`, `blob`, `raw`, `lzmaf`, `lzma`) and the replay sources that
//! produce them; each variant's `Display` is the message users read after the file's path.
//! It imports nothing of the crate, so `error` never imports `format` back.

use std::fmt;

use super::BlobProblem;

/// Why a channel's file (or a sensor's `ts`) contradicts its format, or cannot be written
/// on as it is.
#[derive(Debug)]
#[non_exhaustive]
pub enum CorruptProblem {
    // ----- mjpg (AVI) writing -------------------------------------------------------------
    /// Frames asked to be kept in a file whose header is cut.
    NoFramesToKeep,
    /// A RIFF segment too large for a 32-bit OpenDML index offset.
    SegmentOver4GiB,
    /// A file of several RIFF segments whose header reserved no super index slot.
    NoSuperIndexSlot,
    /// More RIFF segments than the header's super index has `room` for.
    SuperIndexFull { segments: usize, room: usize },
    /// A file without a `movi` list to finish.
    NoMovi,
    /// RIFF segment `segment` (not the last) without its `ix` index chunk.
    SegmentWithoutIx { segment: usize },
    /// A frame of `bytes` bytes, over the writer's `limit`.
    FrameTooLarge { bytes: usize, limit: u32 },

    // ----- blob (jpg, npz) ----------------------------------------------------------------
    /// A blob directory with `problems` that recovery must fix before anything is appended.
    BlobNeedsRecovery { problems: Vec<BlobProblem> },

    // ----- raw ----------------------------------------------------------------------------
    /// A `raw` file of `len` bytes, not whole samples of `sample_bytes`.
    TornTail { len: u64, sample_bytes: usize },

    // ----- lzmaf --------------------------------------------------------------------------
    /// A non-empty data file whose index lists nothing.
    DataWithoutIndex,
    /// An index whose last offset is not the data file's length.
    IndexDataMismatch { index_end: u64, data_len: u64 },
    /// A stored frame that, compressed again, does not decode to the same bytes.
    RecompressedDiffers { frame: u64 },

    // ----- xz (lzma, lzmaf) ---------------------------------------------------------------
    /// An `.xz` stream or frame that does not decode.
    Xz(XzProblem),

    // ----- replay -------------------------------------------------------------------------
    /// A timestamp that is NaN or infinite (the merge cannot place it).
    TimeNotFinite { sample: usize, time: f64 },
    /// Timestamps a model cannot be applied to: the model's error, and the model as
    /// `--timestamps` got it (its `Debug` text: the model type lives above this module).
    Timestamps {
        error: Box<super::Error>,
        model: String,
    },

    // ----- samples read through the Python binding ----------------------------------------
    /// Sample `index` that did not decode (the decoder's error names no sample).
    Sample {
        index: u64,
        error: Box<super::Error>,
    },
}

impl fmt::Display for CorruptProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CorruptProblem as P;
        match self {
            P::NoFramesToKeep => f.write_str("no frames to keep in a file without a header"),
            P::SegmentOver4GiB => {
                f.write_str("a RIFF segment is over 4 GiB: OpenDML cannot index it")
            }
            P::NoSuperIndexSlot => f.write_str(
                "no super index slot in the header: cannot index a file of several RIFF segments",
            ),
            P::SuperIndexFull { segments, room } => write!(
                f,
                "{segments} RIFF segments but the super index has room for {room}"
            ),
            P::NoMovi => f.write_str("no 'movi' list to finish"),
            P::SegmentWithoutIx { segment } => {
                write!(f, "RIFF segment {segment} has no 'ix' index chunk")
            }
            P::FrameTooLarge { bytes, limit } => {
                write!(f, "frame of {bytes} bytes is over the {limit}-byte limit")
            }
            P::BlobNeedsRecovery { problems } => {
                for (i, p) in problems.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(" (run `roverlog recover`)")
            }
            P::TornTail { len, sample_bytes } => write!(
                f,
                "{len} bytes is not a whole number of {sample_bytes}-byte samples (torn tail: run `roverlog recover`)"
            ),
            P::DataWithoutIndex => f.write_str("data without an index (run `roverlog recover`)"),
            P::IndexDataMismatch {
                index_end,
                data_len,
            } => write!(
                f,
                "index ends at {index_end} but the data file is {data_len} bytes (run `roverlog recover`)"
            ),
            P::RecompressedDiffers { frame } => write!(
                f,
                "frame {frame} recompressed does not decode to the same bytes; left as it was"
            ),
            P::Xz(problem) => write!(f, "{problem}"),
            P::TimeNotFinite { sample, time } => {
                write!(f, "sample {sample} has a non-finite time ({time})")
            }
            P::Timestamps { error, model } => write!(f, "{error} (with --timestamps {model})"),
            P::Sample { index, error } => write!(f, "sample {index}: {error}"),
        }
    }
}

/// Why `.xz` data (an `lzma` channel's stream, an `lzmaf` frame) does not decode. Also what
/// a damaged sample says ([`super::Damage::Undecodable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum XzProblem {
    /// The decoder's error: liblzma's (or the streaming reader's) own words, kept as its
    /// text, a foreign library's message rather than one of ours.
    Decoder(String),
    /// Data that decodes to more than `limit` bytes.
    TooLong { limit: usize },
    /// Data that ends inside a stream.
    EndsInStream,
    /// A stream that ends with `bytes` bytes of a sample, not a whole one.
    PartialSample { bytes: usize },
    /// A frame that decodes to `got` bytes, not the sample's `expected`.
    DecodedSize { got: usize, expected: usize },
}

impl fmt::Display for XzProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XzProblem::Decoder(words) => write!(f, "xz: {words}"),
            XzProblem::TooLong { limit } => {
                write!(f, "xz data decompresses to more than {limit} bytes")
            }
            XzProblem::EndsInStream => f.write_str("xz: the data ends inside a stream"),
            XzProblem::PartialSample { bytes } => {
                write!(f, "ends with a partial sample of {bytes} bytes")
            }
            XzProblem::DecodedSize { got, expected } => {
                write!(f, "decompresses to {got} bytes, expected {expected}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Damage, Error};

    /// The messages users and tests read, exactly as they were when they were free text
    /// (the old format strings, filled with the same values).
    #[test]
    fn messages_are_the_ones_users_read() {
        let limit = 256u32 << 20;
        let inner = || Box::new(Error::UnknownModel { name: "x".into() });
        let model = "Smooth { interval: 0.5 }".to_string();
        let problems = vec![
            BlobProblem::SampleGap {
                missing: 3,
                found: 5,
            },
            BlobProblem::EmptySample { index: 5 },
        ];
        let joined = problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        for (problem, want) in [
            (
                CorruptProblem::NoFramesToKeep,
                "no frames to keep in a file without a header".to_string(),
            ),
            (
                CorruptProblem::SegmentOver4GiB,
                "a RIFF segment is over 4 GiB: OpenDML cannot index it".into(),
            ),
            (
                CorruptProblem::NoSuperIndexSlot,
                "no super index slot in the header: cannot index a file of several RIFF segments"
                    .into(),
            ),
            (
                CorruptProblem::SuperIndexFull {
                    segments: 40,
                    room: 32,
                },
                format!("{} RIFF segments but the super index has room for {}", 40, 32),
            ),
            (CorruptProblem::NoMovi, "no 'movi' list to finish".into()),
            (
                CorruptProblem::SegmentWithoutIx { segment: 2 },
                format!("RIFF segment {} has no 'ix' index chunk", 2),
            ),
            (
                CorruptProblem::FrameTooLarge {
                    bytes: 300 << 20,
                    limit,
                },
                format!(
                    "frame of {} bytes is over the {limit}-byte limit",
                    300usize << 20
                ),
            ),
            (
                CorruptProblem::BlobNeedsRecovery {
                    problems: problems.clone(),
                },
                format!("{joined} (run `roverlog recover`)"),
            ),
            (
                CorruptProblem::TornTail {
                    len: 10,
                    sample_bytes: 4,
                },
                format!(
                    "{} bytes is not a whole number of {}-byte samples (torn tail: run `roverlog recover`)",
                    10, 4
                ),
            ),
            (
                CorruptProblem::DataWithoutIndex,
                "data without an index (run `roverlog recover`)".into(),
            ),
            (
                CorruptProblem::IndexDataMismatch {
                    index_end: 80,
                    data_len: 90,
                },
                format!(
                    "index ends at {} but the data file is {} bytes (run `roverlog recover`)",
                    80, 90
                ),
            ),
            (
                CorruptProblem::RecompressedDiffers { frame: 7 },
                format!(
                    "frame {} recompressed does not decode to the same bytes; left as it was",
                    7
                ),
            ),
            (
                CorruptProblem::Xz(XzProblem::Decoder("corrupt data".into())),
                format!("xz: {}", "corrupt data"),
            ),
            (
                CorruptProblem::Xz(XzProblem::TooLong { limit: 12 }),
                format!("xz data decompresses to more than {} bytes", 12),
            ),
            (
                CorruptProblem::Xz(XzProblem::EndsInStream),
                "xz: the data ends inside a stream".into(),
            ),
            (
                CorruptProblem::Xz(XzProblem::PartialSample { bytes: 3 }),
                format!("ends with a partial sample of {} bytes", 3),
            ),
            (
                CorruptProblem::Xz(XzProblem::DecodedSize {
                    got: 3,
                    expected: 4,
                }),
                format!("decompresses to {} bytes, expected {}", 3, 4),
            ),
            (
                CorruptProblem::TimeNotFinite {
                    sample: 4,
                    time: f64::INFINITY,
                },
                format!("sample {} has a non-finite time ({})", 4, f64::INFINITY),
            ),
            (
                CorruptProblem::Timestamps {
                    error: inner(),
                    model: model.clone(),
                },
                format!("{} (with --timestamps {})", inner(), model),
            ),
            (
                CorruptProblem::Sample {
                    index: 9,
                    error: inner(),
                },
                format!("sample {}: {}", 9, inner()),
            ),
        ] {
            let e = Error::Corrupt {
                path: "s/c".into(),
                problem,
            };
            assert_eq!(e.to_string(), format!("s/c: {want}"));
        }
        // A damaged lzma/lzmaf sample says what the decoder said, as before.
        assert_eq!(
            Damage::Undecodable(XzProblem::EndsInStream).to_string(),
            "it does not decode: xz: the data ends inside a stream"
        );
    }
}
