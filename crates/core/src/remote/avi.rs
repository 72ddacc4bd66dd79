//! An `mjpg` video read in place: its header and `idx1` fetched on open, then one range
//! request per frame (the frame's chunk: its 8-byte header, checked against the entry, and
//! the JPEG bytes).
//!
//! The frame list comes from the OpenDML indexes when the header has a super index (`indx`:
//! files past 1 GiB, several `RIFF AVIX` segments; each `ix##` chunk it points at is one
//! `GET` at open), else from `idx1` when the file looks finished as
//! [`crate::format::avi::lazy`] defines it for local files (one RIFF segment whose `movi`
//! list is followed by an `idx1` listing exactly the stream header's frame count). Anything
//! else (a file a crash cut) is fetched whole and parsed by [`parse::parse`], as the local
//! reader parses it.

use super::{BackendError, FrameDamage, RangeFile, RemoteError};
use crate::format::avi::parse::{self, id_at, u32_at, Frame, Header, MAX_FRAMES};

/// Little-endian `u64` at `pos` of `b`.
fn u64_at(b: &[u8], pos: u64) -> Option<u64> {
    let p = usize::try_from(pos).ok()?;
    Some(u64::from_le_bytes(
        b.get(p..p.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// The most bytes of one OpenDML standard index chunk read at open (8 a frame).
const MAX_IX_BYTES: u32 = 64 << 20;

/// Bytes fetched from the start of the file for the header (`hdrl`, and the `movi` list's
/// header after it; OpenCV reserves about 8 KiB for its headers).
const HEAD_BYTES: u64 = 64 << 10;
/// The most bytes a video fetched whole may have.
const MAX_WHOLE_BYTES: u64 = 4 << 30;

pub(super) enum OpenFailure {
    Backend(BackendError),
    Other(RemoteError),
}

pub(super) enum FrameFailure {
    Backend(BackendError),
    Damaged(FrameDamage),
}

impl From<BackendError> for OpenFailure {
    fn from(e: BackendError) -> Self {
        OpenFailure::Backend(e)
    }
}

enum Frames {
    /// `idx1`'s entries (16 bytes each) and what their offsets are relative to.
    Indexed {
        header: Header,
        entries: Vec<u8>,
        base: u64,
    },
    /// The OpenDML indexes' frame list; each read checks its chunk header.
    Listed { header: Header, frames: Vec<Frame> },
    /// The whole file and its parsed frame list.
    Whole { bytes: Vec<u8>, frames: Vec<Frame> },
}

pub(super) struct RemoteAvi {
    file: Box<dyn RangeFile>,
    frames: Frames,
}

/// `idx1` entry `k`: (chunk id, offset, length).
fn entry(entries: &[u8], k: u64) -> Option<([u8; 4], u32, u32)> {
    let e = 16 * k;
    Some((
        id_at(entries, e)?,
        u32_at(entries, e + 8)?,
        u32_at(entries, e + 12)?,
    ))
}

impl RemoteAvi {
    pub(super) fn open(file: Box<dyn RangeFile>, shown: &str) -> Result<RemoteAvi, OpenFailure> {
        let len = file.len();
        if len == 0 {
            let frames = Frames::Whole {
                bytes: Vec::new(),
                frames: Vec::new(),
            };
            return Ok(RemoteAvi { file, frames });
        }
        let head = file.read_range(0..len.min(HEAD_BYTES))?;
        let not_avi = |e| OpenFailure::Other(RemoteError::Format(crate::Error::at(shown, e)));
        let outline = parse::outline(&head).map_err(not_avi)?;
        if let Some(frames) = Self::opendml(&*file, &head, &outline.header)? {
            return Ok(RemoteAvi { file, frames });
        }
        if let Some(frames) = Self::indexed(&*file, &head, outline)? {
            return Ok(RemoteAvi { file, frames });
        }
        if len > MAX_WHOLE_BYTES {
            return Err(OpenFailure::Other(RemoteError::TooLarge {
                file: shown.to_string(),
                what: "video without a usable idx1 (fetched whole)",
                got: len,
                limit: MAX_WHOLE_BYTES,
            }));
        }
        let bytes = file.read_range(0..len)?;
        let layout = parse::parse(&bytes).map_err(not_avi)?;
        let frames = Frames::Whole {
            frames: layout.frames,
            bytes,
        };
        Ok(RemoteAvi { file, frames })
    }

    /// The `idx1` view of a finished single-segment file, from its head: `None` when the
    /// file must be fetched whole.
    fn indexed(
        file: &dyn RangeFile,
        head: &[u8],
        outline: parse::Layout,
    ) -> Result<Option<Frames>, BackendError> {
        let len = file.len();
        let [seg] = &outline.segments[..] else {
            return Ok(None);
        };
        if outline.header.avih.is_none() || outline.header.strh.is_none() {
            return Ok(None);
        }
        // The declared sizes, which the head holds: the RIFF must end the file, and `idx1`
        // follow the `movi` list.
        let (Some(riff), Some(movi)) = (u32_at(head, 4), u32_at(head, seg.movi_pos + 4)) else {
            return Ok(None);
        };
        let riff_end = 8 + u64::from(riff);
        let movi_end = seg.movi_pos + 8 + u64::from(movi);
        let idx1_pos = movi_end + (movi_end & 1);
        if riff == u32::MAX || riff_end > len || riff_end + (riff_end & 1) < len {
            return Ok(None);
        }
        if idx1_pos + 8 > riff_end {
            return Ok(None);
        }
        let count = u64::from(outline.header.length);
        if count == 0 || count > MAX_FRAMES as u64 {
            return Ok(None);
        }
        let want = 8 + 16 * count;
        if idx1_pos + want > riff_end {
            return Ok(None);
        }
        let tail = file.read_range(idx1_pos..idx1_pos + want)?;
        if id_at(&tail, 0) != Some(*b"idx1") || u32_at(&tail, 4).map(u64::from) != Some(16 * count)
        {
            return Ok(None);
        }
        let entries = tail[8..].to_vec();
        let Some((id, off, _)) = entry(&entries, 0) else {
            return Ok(None);
        };
        if !outline.header.is_frame_id(&id) {
            return Ok(None);
        }
        // Offsets are relative to the `movi` fourcc (OpenCV, most writers) or absolute: an
        // offset before the `movi` list can only be relative; else the first chunk decides.
        let movi_data = seg.movi_pos + 8;
        let base = if u64::from(off) < movi_data {
            movi_data
        } else {
            let rel = movi_data + u64::from(off);
            let h = file.read_range(rel..(rel + 8).min(len))?;
            if id_at(&h, 0) == Some(id) {
                movi_data
            } else {
                0
            }
        };
        Ok(Some(Frames::Indexed {
            header: outline.header,
            entries,
            base,
        }))
    }

    /// The frame list of the OpenDML indexes (the super index in the head, then one `GET`
    /// per standard index chunk): `None` when there is no super index or one of them is not
    /// what it should be (the file is then read another way).
    fn opendml(
        file: &dyn RangeFile,
        head: &[u8],
        header: &Header,
    ) -> Result<Option<Frames>, BackendError> {
        let Some((pos, size, true)) = header.indx else {
            return Ok(None);
        };
        let body = pos + 8;
        let (Some(longs), Some(kind), Some(used)) = (
            head.get(body as usize..body as usize + 2),
            head.get(body as usize + 3),
            u32_at(head, body + 4),
        ) else {
            return Ok(None);
        };
        let cap = size.saturating_sub(24) / 16;
        if longs != [4, 0] || *kind != 0 || used == 0 || used > cap {
            return Ok(None);
        }
        let mut frames = Vec::new();
        for k in 0..u64::from(used) {
            let e = body + 24 + 16 * k;
            let (Some(ix), Some(ix_size)) = (u64_at(head, e), u32_at(head, e + 8)) else {
                return Ok(None);
            };
            if ix_size > MAX_IX_BYTES || ix + 8 > file.len() {
                return Ok(None);
            }
            // The entry's size is the chunk's body (ours) or the whole chunk (some writers):
            // 8 bytes more cover both.
            let end = (ix + 8 + u64::from(ix_size)).min(file.len());
            let chunk = file.read_range(ix..end)?;
            let ok = id_at(&chunk, 0).is_some_and(|id| id[..2] == *b"ix")
                && chunk.get(8..10) == Some(&[2, 0][..])
                && chunk.get(11) == Some(&1);
            let (Some(n), Some(base)) = (u32_at(&chunk, 12), u64_at(&chunk, 20)) else {
                return Ok(None);
            };
            if !ok || 32 + 8 * u64::from(n) > chunk.len() as u64 {
                return Ok(None);
            }
            for j in 0..u64::from(n) {
                let (Some(off), Some(len)) =
                    (u32_at(&chunk, 32 + 8 * j), u32_at(&chunk, 36 + 8 * j))
                else {
                    return Ok(None);
                };
                let offset = base + u64::from(off);
                if offset < 8 || frames.len() >= MAX_FRAMES {
                    return Ok(None);
                }
                frames.push(Frame {
                    offset,
                    len: len & 0x7fff_ffff,
                });
            }
        }
        Ok(Some(Frames::Listed {
            header: header.clone(),
            frames,
        }))
    }

    /// Frames in the file.
    pub(super) fn count(&self) -> u64 {
        match &self.frames {
            Frames::Indexed { entries, .. } => entries.len() as u64 / 16,
            Frames::Listed { frames, .. } | Frames::Whole { frames, .. } => frames.len() as u64,
        }
    }

    /// The chunk of a frame at `chunk` (its header's offset) of `len` bytes, checked.
    fn chunk(&self, header: &Header, chunk: u64, len: u32) -> Result<Vec<u8>, FrameFailure> {
        let mismatch = FrameFailure::Damaged(FrameDamage::ChunkMismatch { offset: chunk, len });
        if chunk + 8 + u64::from(len) > self.file.len() {
            return Err(mismatch);
        }
        let mut b = self
            .file
            .read_range(chunk..chunk + 8 + u64::from(len))
            .map_err(FrameFailure::Backend)?;
        let id_ok = id_at(&b, 0).is_some_and(|id| header.is_frame_id(&id));
        if !id_ok || u32_at(&b, 4) != Some(len) {
            return Err(mismatch);
        }
        b.drain(..8);
        Ok(b)
    }

    /// Frame `k`'s JPEG bytes (`k` below [`RemoteAvi::count`]).
    pub(super) fn frame(&self, k: u64) -> Result<Vec<u8>, FrameFailure> {
        match &self.frames {
            Frames::Whole { bytes, frames } => {
                let f = frames[k as usize];
                let at = f.offset as usize;
                Ok(bytes[at..at + f.len as usize].to_vec())
            }
            Frames::Listed { header, frames } => {
                let f = frames[k as usize];
                self.chunk(header, f.offset - 8, f.len)
            }
            Frames::Indexed {
                header,
                entries,
                base,
            } => {
                let (id, off, len) = entry(entries, k).unwrap_or_default();
                let chunk = base + u64::from(off);
                if !header.is_frame_id(&id) {
                    let damage = FrameDamage::ChunkMismatch { offset: chunk, len };
                    return Err(FrameFailure::Damaged(damage));
                }
                self.chunk(header, chunk, len)
            }
        }
    }
}
