//! The layout of an AVI file read from its bytes: the header fields we need, the RIFF
//! segments, and the frame list (from the OpenDML index, from `idx1`, or by scanning `movi`).
//!
//! Every size read from the file is checked against the file's length and the limits below
//! before it is used; a file that lies about sizes (a crashed writer's placeholders, a cut
//! file, corrupt bytes) yields the frames that are whole and a list of problems, never a
//! panic or an allocation sized by the file.

use std::ops::Range;

use crate::error::AviProblem;
use crate::error::{Error, Result};

/// Most frames a file may hold (about six days at 30 fps).
pub const MAX_FRAMES: usize = 1 << 24;
/// Largest single frame (a JPEG of a 16k x 16k image fits).
pub const MAX_FRAME_BYTES: u32 = 256 << 20;
/// Largest `hdrl` list we parse.
pub const MAX_HEADER_BYTES: u32 = 1 << 20;

/// `AVIIF_KEYFRAME` in `idx1` flags.
pub const KEYFRAME: u32 = 0x10;

/// One frame: its JPEG bytes are `offset .. offset + len` of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub offset: u64,
    pub len: u32,
}

impl Frame {
    /// Where the frame's chunk header starts.
    pub fn chunk_start(&self) -> u64 {
        self.offset - 8
    }

    /// Where the frame's chunk ends, padding byte included.
    pub fn chunk_end(&self) -> u64 {
        self.offset + u64::from(self.len) + u64::from(self.len & 1)
    }
}

/// Where the frame list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexSource {
    /// The OpenDML super index and its standard index chunks.
    OpenDml,
    /// The legacy `idx1` chunk.
    Idx1,
    /// No usable index: the `movi` chunks were scanned.
    Scan,
}

/// One RIFF segment (`RIFF AVI ` first, `RIFF AVIX` after it in OpenDML files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Offset of the `RIFF` fourcc.
    pub riff_pos: u64,
    /// Offset of the `LIST` fourcc of its `movi` list.
    pub movi_pos: u64,
    /// Where its `movi` list ends (as declared when that is within the file, else the file end).
    pub movi_end: u64,
    /// The standard index chunk (`ix##`) found in its `movi`, as (offset, chunk size).
    pub ix: Option<(u64, u32)>,
}

/// The header fields the reader and the repair need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// Offset of the `avih` payload.
    pub avih: Option<u64>,
    pub width: u32,
    pub height: u32,
    pub usec_per_frame: u32,
    pub total_frames: u32,
    /// Offset of the video stream's `strh` payload.
    pub strh: Option<u64>,
    pub scale: u32,
    pub rate: u32,
    pub length: u32,
    /// The video stream's number (`00` in `00dc`).
    pub stream: u32,
    /// The video stream's super index slot: an `indx` chunk, or the `JUNK` chunk a writer
    /// reserved for it right after `strf`, as (offset of the chunk, chunk size, is `indx`).
    pub indx: Option<(u64, u32, bool)>,
    /// Offset of the `dmlh` payload (OpenDML total frame count), when present.
    pub dmlh: Option<u64>,
}

impl Header {
    /// The chunk id of the video stream's compressed frames (`00dc`).
    pub fn frame_id(&self) -> [u8; 4] {
        let d = |n: u32| b'0' + (n % 10) as u8;
        [d(self.stream / 10), d(self.stream), b'd', b'c']
    }

    pub(crate) fn is_frame_id(&self, id: &[u8]) -> bool {
        let want = self.frame_id();
        id[..2] == want[..2] && (id[2..] == *b"dc" || id[2..] == *b"db")
    }

    /// Frames per second from the stream header (0 when unknown).
    pub fn fps(&self) -> f64 {
        if self.scale > 0 && self.rate > 0 {
            f64::from(self.rate) / f64::from(self.scale)
        } else if self.usec_per_frame > 0 {
            1e6 / f64::from(self.usec_per_frame)
        } else {
            0.0
        }
    }
}

/// What parsing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub file_len: u64,
    /// Whether the header (`RIFF`, `hdrl`, the start of `movi`) is whole.
    pub header_ok: bool,
    pub header: Header,
    pub segments: Vec<Segment>,
    pub frames: Vec<Frame>,
    pub source: IndexSource,
    /// How many of `frames` an index listed (the rest were found by scanning).
    pub indexed: usize,
    /// The `idx1` chunk, as (offset, chunk size).
    pub idx1: Option<(u64, u32)>,
    /// Offset of a chunk cut by the end of the file (or of bytes that are no chunk).
    pub torn_at: Option<u64>,
    /// What is wrong with the file, in the order found.
    pub problems: Vec<AviProblem>,
}

impl Layout {
    /// Which segment holds `offset` (the last one when none does).
    pub fn segment_of(&self, offset: u64) -> usize {
        self.segments
            .iter()
            .rposition(|s| s.movi_pos <= offset)
            .unwrap_or(0)
    }

    /// Where the whole frames end: the end of the last frame's chunk, or the start of the
    /// first `movi` list's data when there is no frame.
    pub fn frames_end(&self, keep: usize) -> u64 {
        match keep {
            0 => self.segments.first().map_or(0, |s| s.movi_pos + 12),
            k => self.frames[k - 1].chunk_end(),
        }
    }
}

fn u16_at(b: &[u8], pos: u64) -> Option<u16> {
    let p = usize::try_from(pos).ok()?;
    Some(u16::from_le_bytes(
        b.get(p..p.checked_add(2)?)?.try_into().ok()?,
    ))
}

pub(crate) fn u32_at(b: &[u8], pos: u64) -> Option<u32> {
    let p = usize::try_from(pos).ok()?;
    Some(u32::from_le_bytes(
        b.get(p..p.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], pos: u64) -> Option<u64> {
    let p = usize::try_from(pos).ok()?;
    Some(u64::from_le_bytes(
        b.get(p..p.checked_add(8)?)?.try_into().ok()?,
    ))
}

pub(crate) fn id_at(b: &[u8], pos: u64) -> Option<[u8; 4]> {
    let p = usize::try_from(pos).ok()?;
    b.get(p..p.checked_add(4)?)?.try_into().ok()
}

/// A chunk header: (id, size).
fn chunk_at(b: &[u8], pos: u64) -> Option<([u8; 4], u32)> {
    Some((id_at(b, pos)?, u32_at(b, pos + 4)?))
}

fn printable(id: &[u8; 4]) -> bool {
    id.iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b' ' || *c == b'_')
}

/// Whether a declared size is a writer's placeholder or runs past `limit`.
fn size_ok(body: u64, size: u32, limit: u64) -> bool {
    size != u32::MAX && size != 0 && body + u64::from(size) <= limit
}

/// Parses the layout of the AVI file `b`. Errors ([`Error::NotAvi`]) only when `b` is not an
/// AVI file at all.
pub fn parse(b: &[u8]) -> Result<Layout> {
    Ok(complete(b, outline(b)?))
}

/// The frame list of a layout [`outline`] read from `b`: what [`parse`] adds to it.
pub fn complete(b: &[u8], l: Layout) -> Layout {
    complete_with(b, l, &mut |_| {})
}

/// [`complete`], telling `passed` the offset of each frame chunk (and index chunk) the walk
/// comes to, in the order it reads them (file order for a file written in order): a caller
/// reading `b` through a map releases the pages behind the walk, so checking an hour of
/// video holds no more of it than a second (`avi::complete_mapped`).
pub fn complete_with(b: &[u8], mut l: Layout, passed: &mut dyn FnMut(u64)) -> Layout {
    if !l.segments.is_empty() {
        find_frames(b, &mut l, passed);
    }
    l
}

/// The layout of `b` without its frame list: the header, the RIFF segments, where the
/// indexes are, and what is wrong with those. Reads the top-level chunks only (never a
/// frame's page), so it costs the same for an hour of video as for a second.
pub fn outline(b: &[u8]) -> Result<Layout> {
    let n = b.len() as u64;
    let mut l = Layout {
        file_len: n,
        header_ok: false,
        header: Header::default(),
        segments: Vec::new(),
        frames: Vec::new(),
        source: IndexSource::Scan,
        indexed: 0,
        idx1: None,
        torn_at: None,
        problems: Vec::new(),
    };
    if n < 12 {
        let head: &[u8] = b"RIFF\0\0\0\0AVI ";
        let prefix_ok = b
            .iter()
            .zip(head)
            .enumerate()
            .all(|(i, (x, y))| (4..8).contains(&i) || x == y);
        if !prefix_ok {
            return Err(Error::NotAvi);
        }
        l.problems.push(AviProblem::HeaderCut { len: n });
        return Ok(l);
    }
    if &b[0..4] != b"RIFF" || &b[8..12] != b"AVI " {
        return Err(Error::NotAvi);
    }
    let mut riff_pos = 0u64;
    let mut first = true;
    loop {
        let size = u32_at(b, riff_pos + 4).unwrap_or(u32::MAX);
        let riff_end = if size_ok(riff_pos + 8, size, n) {
            riff_pos + 8 + u64::from(size)
        } else {
            l.problems.push(if size == u32::MAX || size == 0 {
                AviProblem::RiffUnfinished { pos: riff_pos }
            } else {
                AviProblem::RiffCut {
                    pos: riff_pos,
                    size,
                    left: n - riff_pos - 8,
                }
            });
            n
        };
        walk_riff(b, riff_pos, riff_end, first, &mut l);
        first = false;
        let next = riff_end + (riff_end & 1);
        if next + 12 <= n
            && id_at(b, next) == Some(*b"RIFF")
            && id_at(b, next + 8) == Some(*b"AVIX")
        {
            riff_pos = next;
            continue;
        }
        if next < n && l.torn_at.is_none() {
            let rest = &b[next as usize..];
            if rest.iter().any(|&x| x != 0) {
                l.problems.push(AviProblem::TrailingBytes { len: n - next });
            }
        }
        break;
    }
    if l.segments.is_empty() {
        if l.header_ok {
            l.problems.push(AviProblem::NoMovi);
        }
        return Ok(l);
    }
    l.header_ok = l.header.avih.is_some() && l.header.strh.is_some();
    if !l.header_ok {
        l.problems.push(AviProblem::NoVideoHeader);
    }
    Ok(l)
}

/// Walks the top-level chunks of one RIFF segment.
fn walk_riff(b: &[u8], riff_pos: u64, riff_end: u64, first: bool, l: &mut Layout) {
    let mut pos = riff_pos + 12;
    while pos + 8 <= riff_end {
        let Some((id, size)) = chunk_at(b, pos) else {
            break;
        };
        let body = pos + 8;
        if &id == b"LIST" && pos + 12 <= riff_end {
            let kind = id_at(b, body).unwrap_or_default();
            if &kind == b"movi" {
                let declared = size_ok(body, size, riff_end) && size >= 4;
                if !declared {
                    l.problems.push(AviProblem::MoviUnfinished { pos });
                }
                let movi_end = if declared {
                    body + u64::from(size)
                } else {
                    riff_end
                };
                l.segments.push(Segment {
                    riff_pos,
                    movi_pos: pos,
                    movi_end,
                    ix: None,
                });
                pos = movi_end + (movi_end & 1);
                continue;
            }
            if &kind == b"hdrl" && first {
                if size > MAX_HEADER_BYTES || body + u64::from(size) > riff_end {
                    l.problems.push(AviProblem::HdrlCut { size });
                    return;
                }
                parse_hdrl(b, body + 4, body + u64::from(size), &mut l.header);
            }
        } else if &id == b"idx1" && first {
            if body + u64::from(size) <= riff_end {
                l.idx1 = Some((pos, size));
            } else {
                l.problems.push(AviProblem::Idx1Cut { pos });
                l.torn_at = Some(pos);
                return;
            }
        }
        if body + u64::from(size) > riff_end {
            if id != *b"LIST" || !l.segments.is_empty() {
                l.torn_at.get_or_insert(pos);
            }
            l.problems.push(AviProblem::ChunkCut { id, pos });
            return;
        }
        let end = body + u64::from(size);
        pos = end + (end & 1);
    }
}

/// Reads `avih`, the video stream's `strl` and `odml` from the `hdrl` list body.
fn parse_hdrl(b: &[u8], mut pos: u64, end: u64, h: &mut Header) {
    let mut stream = 0u32;
    let mut video = false;
    while pos + 8 <= end {
        let Some((id, size)) = chunk_at(b, pos) else {
            return;
        };
        let body = pos + 8;
        let cend = (body + u64::from(size)).min(end);
        match &id {
            b"avih" if size >= 40 => {
                h.avih = Some(body);
                h.usec_per_frame = u32_at(b, body).unwrap_or(0);
                h.total_frames = u32_at(b, body + 16).unwrap_or(0);
                h.width = u32_at(b, body + 32).unwrap_or(0);
                h.height = u32_at(b, body + 36).unwrap_or(0);
            }
            b"LIST" => match &id_at(b, body).unwrap_or_default() {
                b"strl" if !video => {
                    if parse_strl(b, body + 4, cend, h) {
                        video = true;
                        h.stream = stream;
                    }
                    stream += 1;
                }
                b"odml" if id_at(b, body + 4) == Some(*b"dmlh") => h.dmlh = Some(body + 12),
                _ => {}
            },
            _ => {}
        }
        pos = cend + (cend & 1);
    }
}

/// Reads one `strl`; true when it is a video stream's.
fn parse_strl(b: &[u8], mut pos: u64, end: u64, h: &mut Header) -> bool {
    let mut video = false;
    let mut after_strf = false;
    while pos + 8 <= end {
        let Some((id, size)) = chunk_at(b, pos) else {
            break;
        };
        let body = pos + 8;
        match &id {
            b"strh" if size >= 36 => {
                if id_at(b, body) != Some(*b"vids") {
                    return false;
                }
                video = true;
                h.strh = Some(body);
                h.scale = u32_at(b, body + 20).unwrap_or(0);
                h.rate = u32_at(b, body + 24).unwrap_or(0);
                h.length = u32_at(b, body + 32).unwrap_or(0);
            }
            b"strf" => after_strf = true,
            b"indx" => h.indx = Some((pos, size, true)),
            b"JUNK" if after_strf && h.indx.is_none() => h.indx = Some((pos, size, false)),
            _ => {}
        }
        let cend = body + u64::from(size);
        pos = cend + (cend & 1);
    }
    video
}

/// Fills `l.frames`: the index's frames while they match the data, then whatever whole frame
/// chunks a scan finds after them.
fn find_frames(b: &[u8], l: &mut Layout, passed: &mut dyn FnMut(u64)) {
    let from_odml = match l.header.indx {
        Some((pos, size, true)) => odml_frames(b, pos, size, l, passed),
        _ => None,
    };
    if let Some(frames) = from_odml {
        l.frames = frames;
        l.source = IndexSource::OpenDml;
    } else if let Some((pos, size)) = l.idx1 {
        l.frames = idx1_frames(b, pos, size, l, passed);
        l.source = IndexSource::Idx1;
    }
    l.indexed = l.frames.len();
    let start = match l.frames.last() {
        Some(f) => f.chunk_end(),
        None => l.segments[0].movi_pos + 12,
    };
    let first_seg = l.segment_of(start);
    for s in first_seg..l.segments.len() {
        let seg = &l.segments[s];
        let from = if s == first_seg {
            start
        } else {
            seg.movi_pos + 12
        };
        let range = from..seg.movi_end;
        if !scan(b, range, s, l, passed) {
            break;
        }
    }
    if l.source == IndexSource::Scan {
        l.problems.push(AviProblem::NoIndex {
            scanned: l.frames.len(),
        });
    } else if l.frames.len() > l.indexed {
        l.problems.push(AviProblem::Unindexed {
            count: l.frames.len() - l.indexed,
        });
    }
}

/// Scans frame chunks in `range` of segment `s`; false when it stopped at a cut or at
/// bytes that are no chunk.
fn scan(
    b: &[u8],
    range: Range<u64>,
    s: usize,
    l: &mut Layout,
    passed: &mut dyn FnMut(u64),
) -> bool {
    let (mut pos, end) = (range.start, range.end);
    while pos + 8 <= end {
        passed(pos);
        let (id, size) = chunk_at(b, pos).unwrap_or_default();
        let body = pos + 8;
        let cend = body + u64::from(size);
        if l.header.is_frame_id(&id) {
            if size > MAX_FRAME_BYTES || l.frames.len() >= MAX_FRAMES {
                l.problems.push(AviProblem::FrameTooLarge {
                    pos,
                    size,
                    max_bytes: MAX_FRAME_BYTES,
                    max_frames: MAX_FRAMES,
                });
                l.torn_at = Some(pos);
                return false;
            }
            if cend > end {
                break;
            }
            l.frames.push(Frame {
                offset: body,
                len: size,
            });
        } else if &id == b"LIST" && id_at(b, body) == Some(*b"rec ") {
            pos = body + 4;
            continue;
        } else if !printable(&id) {
            l.problems.push(AviProblem::NotAChunk {
                pos,
                left: end - pos,
            });
            l.torn_at = Some(pos);
            return false;
        } else if cend > end {
            break;
        } else if id[..2] == *b"ix" {
            l.segments[s].ix = Some((pos, size));
        }
        pos = cend + (cend & 1);
    }
    if pos < end {
        l.problems.push(if end == l.file_len {
            AviProblem::ChunkCutAtEnd {
                pos,
                len: end - pos,
            }
        } else {
            AviProblem::PastMovi { pos }
        });
        l.torn_at = Some(pos);
        return false;
    }
    true
}

/// Whether a frame chunk of `len` bytes with id `ckid` starts at `chunk`.
pub(crate) fn chunk_matches(b: &[u8], chunk: u64, len: u32, l: &Layout) -> bool {
    match chunk_at(b, chunk) {
        Some((id, size)) => {
            l.header.is_frame_id(&id)
                && size == len
                && len <= MAX_FRAME_BYTES
                && chunk + 8 + u64::from(len) <= l.file_len
        }
        None => false,
    }
}

/// The frames `idx1` lists while they match the data.
fn idx1_frames(
    b: &[u8],
    pos: u64,
    size: u32,
    l: &mut Layout,
    passed: &mut dyn FnMut(u64),
) -> Vec<Frame> {
    let movi = l.segments[0].movi_pos + 8;
    let entries = (size / 16) as usize;
    let mut frames = Vec::new();
    let mut base = None;
    for k in 0..entries {
        let e = pos + 8 + 16 * k as u64;
        let (Some(id), Some(off), Some(len)) = (id_at(b, e), u32_at(b, e + 8), u32_at(b, e + 12))
        else {
            break;
        };
        if !l.header.is_frame_id(&id) {
            continue;
        }
        if frames.len() >= MAX_FRAMES {
            l.problems.push(AviProblem::Idx1TooLong {
                max_frames: MAX_FRAMES,
            });
            break;
        }
        // Offsets are relative to the 'movi' fourcc, or (some writers) absolute.
        let base = *base.get_or_insert_with(|| {
            if chunk_matches(b, movi + u64::from(off), len, l) {
                movi
            } else {
                0
            }
        });
        let chunk = base + u64::from(off);
        passed(chunk);
        if !chunk_matches(b, chunk, len, l) {
            l.problems.push(AviProblem::Idx1Mismatch {
                entry: k,
                offset: off,
                len,
            });
            break;
        }
        frames.push(Frame {
            offset: chunk + 8,
            len,
        });
    }
    frames
}

/// The frames the OpenDML indexes list, or `None` (with a problem) when the super index is
/// unusable.
fn odml_frames(
    b: &[u8],
    pos: u64,
    size: u32,
    l: &mut Layout,
    passed: &mut dyn FnMut(u64),
) -> Option<Vec<Frame>> {
    let body = pos + 8;
    let longs = u16_at(b, body)?;
    let kind = *b.get(usize::try_from(body + 3).ok()?)?;
    let used = u32_at(b, body + 4)?;
    if longs != 4 || kind != 0 || u64::from(size) < 24 {
        l.problems.push(AviProblem::NotSuperIndex);
        return None;
    }
    let cap = (size - 24) / 16;
    if used > cap {
        l.problems
            .push(AviProblem::SuperIndexOverfull { used, cap });
        return None;
    }
    let mut frames = Vec::new();
    for k in 0..u64::from(used) {
        let e = body + 24 + 16 * k;
        let ix = u64_at(b, e)?;
        let Some(ok) = ix_frames(b, ix, l, &mut frames, passed) else {
            l.problems
                .push(AviProblem::IndexChunkUnreadable { entry: k, pos: ix });
            break;
        };
        if !ok {
            break;
        }
        let s = l.segment_of(ix);
        l.segments[s].ix = Some((ix, u32_at(b, ix + 4)?));
    }
    Some(frames)
}

/// Appends the frames of the standard index chunk at `pos`; `Some(false)` when an entry did
/// not match the data, `None` when the chunk is not a standard index.
fn ix_frames(
    b: &[u8],
    pos: u64,
    l: &mut Layout,
    frames: &mut Vec<Frame>,
    passed: &mut dyn FnMut(u64),
) -> Option<bool> {
    let (id, size) = chunk_at(b, pos)?;
    let body = pos + 8;
    if id[..2] != *b"ix" || u64::from(size) < 24 || body + u64::from(size) > l.file_len {
        return None;
    }
    let longs = u16_at(b, body)?;
    let kind = *b.get(usize::try_from(body + 3).ok()?)?;
    let used = u32_at(b, body + 4)?;
    let base = u64_at(b, body + 12)?;
    if longs != 2 || kind != 1 || u64::from(used) > (u64::from(size) - 24) / 8 {
        return None;
    }
    for k in 0..u64::from(used) {
        let e = body + 24 + 8 * k;
        let off = u32_at(b, e)?;
        let len = u32_at(b, e + 4)? & 0x7fff_ffff;
        let offset = base.checked_add(u64::from(off))?;
        passed(offset.saturating_sub(8));
        if frames.len() >= MAX_FRAMES || offset < 8 || !chunk_matches(b, offset - 8, len, l) {
            l.problems
                .push(AviProblem::IndexEntryMismatch { entry: k, pos });
            return Some(false);
        }
        frames.push(Frame { offset, len });
    }
    Some(true)
}
