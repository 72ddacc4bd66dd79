//! Why a sample that a sensor counts cannot be read ([`super::Error::DamagedSample`]), as
//! values. Beside the error type, below the channel readers that find them.

use std::fmt;
use std::path::PathBuf;

/// What is wrong with one sample of a channel that the sensor's `ts` (or the channel's own
/// index or listing) counts: the readers still read every intact sample around it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Damage {
    /// The channel's file ends inside or before the sample: `have` of its `need` bytes are
    /// there (0: none).
    Cut { have: u64, need: u64 },
    /// An `lzmaf` sample without an entry in the channel's `_i` index, which lists `frames`.
    NotIndexed { frames: u64 },
    /// An `lzmaf` frame whose index entry ends at `end`, past the data file's `data_len`
    /// bytes (the data file was cut, or the index reached the disk before the data).
    PastData { end: u64, data_len: u64 },
    /// An `lzmaf` frame whose index entry cannot be trusted: the index does not start at 0,
    /// or an entry goes back (`start` > `end`), here or before.
    BadIndex { start: u64, end: u64 },
    /// A blob sample (`jpg`/`npz`) whose file does not exist.
    FileMissing { file: PathBuf },
    /// A blob sample whose file is empty (how a power cut leaves a file whose data never
    /// reached the disk).
    FileEmpty { file: PathBuf },
    /// A video frame the `mjpg` file does not hold whole: the file holds `frames` (it was cut,
    /// or its writer stopped before the frame).
    NoFrame { frames: u64 },
    /// Stored bytes that do not decode: the decoder's words.
    Undecodable(String),
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Cut { have: 0, .. } => f.write_str("the file ends before it"),
            Damage::Cut { have, need } => {
                write!(f, "the file ends inside it ({have} of its {need} bytes)")
            }
            Damage::NotIndexed { frames } => {
                write!(f, "not in the channel's index (`_i` lists {frames} frames)")
            }
            Damage::PastData { end, data_len } => write!(
                f,
                "its index entry ends at byte {end}, past the data file's {data_len} bytes"
            ),
            Damage::BadIndex { start, end } => write!(
                f,
                "its index entry ({start}..{end}) is out of order, or follows one that is"
            ),
            Damage::FileMissing { file } => write!(f, "{} is missing", file.display()),
            Damage::FileEmpty { file } => write!(f, "{} is empty", file.display()),
            Damage::NoFrame { frames } => {
                write!(f, "the video file holds only {frames} whole frames")
            }
            Damage::Undecodable(msg) => write!(f, "it does not decode: {msg}"),
        }
    }
}
