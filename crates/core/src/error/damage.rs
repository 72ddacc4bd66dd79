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
    /// Stored `.xz` bytes (an `lzma` stream, an `lzmaf` frame) that do not decode.
    Undecodable(super::XzProblem),
    /// A JPEG sample (`jpg` file, `mjpg` frame) whose bytes are there but zero-filled: how a
    /// power cut leaves a sample whose space was allocated and whose data
    /// never reached the disk (see [`zero_filled`]). Recovery cuts it, as an empty file.
    ZeroFilled,
    /// A JPEG sample whose bytes look whole (not zero-filled) but do not decode: the
    /// decoder's words. Recovery keeps it (it cuts what is missing, cut or zero-filled; it
    /// does not decode every frame).
    JpegUndecodable(String),
}

/// How many zero bytes at a stored JPEG's end (and, for one that is all zeros, at its
/// start too) make it zero-filled ([`zero_filled`]). A JPEG ends with its EOI marker, after
/// which a writer pads with at most a few bytes.
pub const ZERO_RUN: usize = 16;

/// Whether a stored JPEG's bytes are what a power cut leaves of a sample whose blocks were
/// allocated but never written: at least [`ZERO_RUN`] bytes, ending with that many zeros, and
/// starting either with the JPEG's SOI marker (its first blocks written) or with zeros too
/// (none written). Bytes that are no JPEG at all otherwise (a `jpg` channel holds what its
/// driver sent) are not taken for one.
pub fn zero_filled(bytes: &[u8]) -> bool {
    let zeros = |b: &[u8]| b.iter().all(|&x| x == 0);
    bytes.len() >= ZERO_RUN
        && zeros(&bytes[bytes.len() - ZERO_RUN..])
        && (bytes.starts_with(&[0xFF, 0xD8]) || zeros(&bytes[..ZERO_RUN]))
}

impl Damage {
    /// Whether `roverlog recover` cuts the sensor back to the samples before this damage.
    pub fn recover_cuts(&self) -> bool {
        !matches!(self, Damage::JpegUndecodable(_))
    }

    /// What the user can do about it, for the error's message.
    pub fn advice(&self) -> &'static str {
        if self.recover_cuts() {
            "`roverlog validate` reports it; `roverlog recover` cuts the sensor back to the samples before the damage"
        } else {
            "`roverlog recover` keeps it: its bytes are all there; read the samples around it"
        }
    }
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
            Damage::Undecodable(why) => write!(f, "it does not decode: {why}"),
            Damage::ZeroFilled => f.write_str(
                "its bytes are zero-filled, not a JPEG (a power cut left its data unwritten)",
            ),
            Damage::JpegUndecodable(msg) => write!(f, "the JPEG does not decode: {msg}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_filled_is_what_a_power_cut_leaves_of_a_jpeg_and_nothing_a_driver_sends() {
        let mut jpeg = vec![0xFF, 0xD8];
        jpeg.extend((0..200).map(|i| (i * 37 % 251 + 1) as u8));
        jpeg.extend([0xFF, 0xD9, 0, 0]);
        assert!(!zero_filled(&jpeg), "a whole JPEG, padded");
        let mut cut = jpeg.clone();
        cut[100..].fill(0);
        assert!(zero_filled(&cut), "its end never written");
        assert!(zero_filled(&[0u8; 300]), "nothing written");
        // What a driver may send a jpg channel that is no JPEG is not taken for one.
        assert!(!zero_filled(&[0u8; 15]), "shorter than the run");
        assert!(!zero_filled(&[0]), "one zero byte");
        let mut leading = vec![0u8; 20];
        leading.extend([1, 2, 3]);
        assert!(!zero_filled(&leading), "zeros at the start only");
        let mut trailing = vec![7u8; 20];
        trailing.extend([0u8; 20]);
        assert!(
            !zero_filled(&trailing),
            "zeros at the end of bytes that are no JPEG"
        );
    }
}
