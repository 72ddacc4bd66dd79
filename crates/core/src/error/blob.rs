//! What breaks the numbered sample files of a blob channel directory (`jpg`, `npz`), as
//! values ([`BlobProblem`]). `validate` reports them (as `Problem::Blob`), and the writer
//! refuses to append to a directory that has them ([`super::CorruptProblem::BlobNeedsRecovery`]).
//! It lives beside the error type (like the AVI findings) and imports nothing of the crate,
//! so `error` never imports `format` back.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

/// One thing found wrong with a blob channel's sample files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlobProblem {
    /// A file that is not a sample (recovery leaves it for a person).
    UnexpectedFile { name: OsString },
    /// Two files for one sample index.
    DuplicateSample { index: u64, path: PathBuf },
    /// An empty sample file (how a sample lost in a power cut looks).
    EmptySample { index: u64 },
    /// A gap in the sample numbers.
    SampleGap { missing: u64, found: u64 },
    /// A `jpg` sample file zero-filled at its end (how a power cut can leave a sample whose
    /// data never reached the disk; see [`super::zero_filled`]).
    ZeroFilledSample { index: u64 },
    /// The writer's temporary file, left by a crash.
    PartialSample { path: PathBuf },
}

impl fmt::Display for BlobProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobProblem::UnexpectedFile { name } => write!(f, "unexpected file {name:?}"),
            BlobProblem::DuplicateSample { index, path } => {
                write!(f, "sample {index} appears twice ({})", path.display())
            }
            BlobProblem::EmptySample { index } => write!(f, "sample {index} is an empty file"),
            BlobProblem::SampleGap { missing, found } => {
                write!(f, "sample {missing} is missing but sample {found} exists")
            }
            BlobProblem::ZeroFilledSample { index } => write!(
                f,
                "sample {index} is zero-filled, not a JPEG (a power cut left its data unwritten)"
            ),
            BlobProblem::PartialSample { path } => {
                write!(f, "partial sample {} left by a crash", path.display())
            }
        }
    }
}
