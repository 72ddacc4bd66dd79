//! What is wrong with a GulpIO2 directory ([`super::Error::Gulp`]), as values. Beside the
//! error type, below `gulp`, which produces them; each variant's `Display` is the message
//! users read after the file's path.

use std::fmt;
use std::path::PathBuf;

/// Why a GulpIO2 directory, chunk or id could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum GulpProblem {
    /// Two chunk files of one kind with the same number (`data_1.gulp`, `data_01.gulp`).
    ChunkNumberReused { number: u64, other: PathBuf },
    /// A directory with no `data_<n>.gulp` nor `meta_<n>.gmeta`.
    NotGulpDir,
    /// A `data_<n>.gulp` without its `meta_<n>.gmeta`.
    NoMetaFile { number: u64 },
    /// A `meta_<n>.gmeta` without its `data_<n>.gulp`.
    NoDataFile { number: u64 },
    /// Frame `frame` of `id` ends at byte `end`, past the `data_len` bytes of `data`.
    FramePastEnd {
        id: String,
        frame: usize,
        end: u64,
        data: PathBuf,
        data_len: u64,
    },
    /// An id already found in the `.gmeta` file `first`.
    DuplicateId { id: String, first: PathBuf },
    /// A data file that lost bytes `lo..hi` since the directory was opened.
    Shrunk { lo: u64, hi: u64 },
    /// An id the directory does not hold.
    NoId { id: String },
    /// An id whose `meta_data` list is empty.
    EmptyMeta { id: String },
    /// Valid JSON in a `.gmeta` file with the wrong content (a negative offset, `pad >
    /// length`, too many frames, a duplicate id, ...): serde's message, which names the id.
    BadMeta(serde_json::Error),
    /// Frame `frame` of `id` that failed (to decode, for instance).
    Frame {
        id: String,
        frame: i64,
        error: Box<super::Error>,
    },
}

impl fmt::Display for GulpProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GulpProblem::ChunkNumberReused { number, other } => {
                write!(
                    f,
                    "chunk number {number} is also used by {}",
                    other.display()
                )
            }
            GulpProblem::NotGulpDir => {
                f.write_str("no data_<n>.gulp / meta_<n>.gmeta files: not a gulp directory")
            }
            GulpProblem::NoMetaFile { number } => write!(f, "has no matching meta_{number}.gmeta"),
            GulpProblem::NoDataFile { number } => write!(f, "has no matching data_{number}.gulp"),
            GulpProblem::FramePastEnd {
                id,
                frame,
                end,
                data,
                data_len,
            } => write!(
                f,
                "id {id:?}: frame {frame} ends at byte {end} but {} holds only {data_len} bytes",
                data.display()
            ),
            GulpProblem::DuplicateId { id, first } => {
                write!(f, "duplicate id {id:?}: also in {}", first.display())
            }
            GulpProblem::Shrunk { lo, hi } => {
                write!(f, "shorter than when opened: bytes {lo}..{hi} are gone")
            }
            GulpProblem::NoId { id } => write!(f, "no id {id:?}"),
            GulpProblem::EmptyMeta { id } => write!(f, "id {id:?}: meta_data is empty"),
            GulpProblem::BadMeta(e) => write!(f, "{e}"),
            GulpProblem::Frame { id, frame, error } => {
                write!(f, "id {id:?}: frame {frame}: {error}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// The messages users, the Python layer and tests match on, exactly as they were when they
    /// were free text.
    #[test]
    fn messages_are_the_ones_users_read() {
        let e = |problem| {
            Error::Gulp {
                path: "g/meta_1.gmeta".into(),
                problem: Box::new(problem),
            }
            .to_string()
        };
        let bad_json = serde_json::from_str::<u8>("-1").unwrap_err();
        let bad_json_text = bad_json.to_string();
        for (problem, want) in [
            (
                GulpProblem::ChunkNumberReused {
                    number: 1,
                    other: "g/data_01.gulp".into(),
                },
                "chunk number 1 is also used by g/data_01.gulp".to_string(),
            ),
            (
                GulpProblem::NotGulpDir,
                "no data_<n>.gulp / meta_<n>.gmeta files: not a gulp directory".into(),
            ),
            (
                GulpProblem::NoMetaFile { number: 3 },
                "has no matching meta_3.gmeta".into(),
            ),
            (
                GulpProblem::NoDataFile { number: 4 },
                "has no matching data_4.gulp".into(),
            ),
            (
                GulpProblem::FramePastEnd {
                    id: "v".into(),
                    frame: 2,
                    end: 900,
                    data: "g/data_1.gulp".into(),
                    data_len: 800,
                },
                "id \"v\": frame 2 ends at byte 900 but g/data_1.gulp holds only 800 bytes".into(),
            ),
            (
                GulpProblem::DuplicateId {
                    id: "v".into(),
                    first: "g/meta_0.gmeta".into(),
                },
                "duplicate id \"v\": also in g/meta_0.gmeta".into(),
            ),
            (
                GulpProblem::Shrunk { lo: 8, hi: 16 },
                "shorter than when opened: bytes 8..16 are gone".into(),
            ),
            (GulpProblem::NoId { id: "w".into() }, "no id \"w\"".into()),
            (
                GulpProblem::EmptyMeta { id: "v".into() },
                "id \"v\": meta_data is empty".into(),
            ),
            (GulpProblem::BadMeta(bad_json), bad_json_text),
            (
                GulpProblem::Frame {
                    id: "v".into(),
                    frame: -1,
                    error: Box::new(Error::Jpeg(crate::error::JpegProblem::NoDimensions)),
                },
                format!(
                    "id \"v\": frame -1: {}",
                    Error::Jpeg(crate::error::JpegProblem::NoDimensions)
                ),
            ),
        ] {
            assert_eq!(e(problem), format!("g/meta_1.gmeta: {want}"));
        }
    }
}
