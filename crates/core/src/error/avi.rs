//! What the AVI parser finds wrong with a file, as values ([`AviProblem`]).
//!
//! A finding is not an error: parsing goes on and yields the frames that are whole. `validate`
//! reports the findings (as `Problem::Avi`) and the writer refuses to append to a file that
//! has them. Each variant carries the offsets and sizes involved; its `Display` is the line
//! users read. It lives beside the error type (like the zarr and JPEG problems) and imports
//! nothing of the crate, so `error` never imports `format` back.

use std::fmt;

/// One thing the AVI parser found wrong (a cut, an unfinished writer, an index that does not
/// match the data). Offsets are byte offsets in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AviProblem {
    /// The file ends inside the 12-byte AVI header.
    HeaderCut { len: u64 },
    /// A RIFF chunk with no size (a placeholder the writer never replaced).
    RiffUnfinished { pos: u64 },
    /// A RIFF chunk that declares more bytes than the file holds after it.
    RiffCut { pos: u64, size: u32, left: u64 },
    /// Bytes after the last RIFF chunk.
    TrailingBytes { len: u64 },
    /// No `movi` list.
    NoMovi,
    /// No video stream header.
    NoVideoHeader,
    /// A `movi` list with no valid size.
    MoviUnfinished { pos: u64 },
    /// An `hdrl` list cut or too large.
    HdrlCut { size: u32 },
    /// An `idx1` chunk cut by the end of the file.
    Idx1Cut { pos: u64 },
    /// A chunk cut by the end of its RIFF chunk.
    ChunkCut { id: [u8; 4], pos: u64 },
    /// No index at all; `scanned` frames were found by scanning.
    NoIndex { scanned: usize },
    /// Whole frames after the last indexed one.
    Unindexed { count: usize },
    /// A frame chunk over the size limit, or one frame more than the frame limit.
    FrameTooLarge {
        pos: u64,
        size: u32,
        max_bytes: u32,
        max_frames: usize,
    },
    /// Bytes in the `movi` list that are no chunk.
    NotAChunk { pos: u64, left: u64 },
    /// A chunk cut by the end of the file.
    ChunkCutAtEnd { pos: u64, len: u64 },
    /// A chunk that runs past the end of its `movi` list.
    PastMovi { pos: u64 },
    /// An `idx1` listing more frames than we read.
    Idx1TooLong { max_frames: usize },
    /// An `idx1` entry that points at no matching frame chunk.
    Idx1Mismatch { entry: usize, offset: u32, len: u32 },
    /// An `indx` chunk that is not an OpenDML super index.
    NotSuperIndex,
    /// An `indx` listing more index chunks than it has room for.
    SuperIndexOverfull { used: u32, cap: u32 },
    /// An OpenDML index chunk that cannot be read.
    IndexChunkUnreadable { entry: u64, pos: u64 },
    /// An OpenDML index entry that points at no matching frame chunk.
    IndexEntryMismatch { entry: u64, pos: u64 },
}

impl fmt::Display for AviProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AviProblem::*;
        match self {
            HeaderCut { len } => write!(f, "file ends inside the AVI header ({len} bytes)"),
            RiffUnfinished { pos } => write!(
                f,
                "RIFF chunk at {pos} has no size (the writer did not finish)"
            ),
            RiffCut { pos, size, left } => write!(
                f,
                "RIFF chunk at {pos} declares {size} bytes, the file ends {left} bytes after it (cut)"
            ),
            TrailingBytes { len } => write!(f, "{len} bytes after the last RIFF chunk"),
            NoMovi => f.write_str("no 'movi' list (no frame was written)"),
            NoVideoHeader => f.write_str("no video stream header ('avih'/'strh' with type 'vids')"),
            MoviUnfinished { pos } => write!(
                f,
                "'movi' list at {pos} has no valid size (the writer did not finish)"
            ),
            HdrlCut { size } => write!(f, "'hdrl' list of {size} bytes is cut or too large"),
            Idx1Cut { pos } => write!(f, "'idx1' chunk at {pos} is cut by the end of the file"),
            ChunkCut { id, pos } => write!(
                f,
                "chunk '{}' at {pos} is cut by the end of its RIFF chunk",
                String::from_utf8_lossy(id)
            ),
            NoIndex { scanned } => write!(
                f,
                "no index ('idx1' or OpenDML): the writer did not finish ({scanned} frames found by scanning)"
            ),
            Unindexed { count } => write!(
                f,
                "{count} whole frame(s) after the last indexed one (the writer did not finish)"
            ),
            FrameTooLarge {
                pos,
                size,
                max_bytes,
                max_frames,
            } => write!(
                f,
                "frame chunk at {pos} of {size} bytes is over the limit of {max_bytes} bytes or {max_frames} frames"
            ),
            NotAChunk { pos, left } => write!(
                f,
                "bytes at {pos} are not a chunk ({left} bytes to the end of the 'movi' list)"
            ),
            ChunkCutAtEnd { pos, len } => {
                write!(f, "{len} bytes of a chunk cut by the end of the file at {pos}")
            }
            PastMovi { pos } => write!(f, "chunk at {pos} runs past the end of its 'movi' list"),
            Idx1TooLong { max_frames } => write!(f, "'idx1' lists more than {max_frames} frames"),
            Idx1Mismatch { entry, offset, len } => write!(
                f,
                "'idx1' entry {entry} (offset {offset}, {len} bytes) does not match the data"
            ),
            NotSuperIndex => f.write_str("'indx' chunk is not an OpenDML super index"),
            SuperIndexOverfull { used, cap } => write!(
                f,
                "'indx' lists {used} index chunks but has room for {cap}"
            ),
            IndexChunkUnreadable { entry, pos } => {
                write!(f, "OpenDML index chunk {entry} at {pos} is unreadable")
            }
            IndexEntryMismatch { entry, pos } => write!(
                f,
                "OpenDML index entry {entry} of the chunk at {pos} does not match the data"
            ),
        }
    }
}
