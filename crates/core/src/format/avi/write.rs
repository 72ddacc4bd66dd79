//! Writing MJPEG AVI files: the header, frame chunks appended as they come, and the trailer
//! (indexes and final sizes) written at finish, at each 1 GiB segment boundary, and by
//! recovery (which calls [`write_trailer`] with what a scan found).
//!
//! Until the trailer is written the `RIFF` and `movi` sizes are placeholders (`0xFFFFFFFF`,
//! as ffmpeg leaves them) and there is no index: [`super::parse`] then finds every whole
//! frame by scanning, and `recover` writes the trailer.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::parse::{self, Frame, Header, Segment, KEYFRAME, MAX_FRAME_BYTES};
use crate::error::{CorruptProblem, Error, IoContext, Result};
use crate::format::append::AppendFile;

/// A RIFF segment is closed and a `RIFF AVIX` one started when it would pass this size
/// (OpenDML's and ffmpeg's 1 GiB).
pub const RIFF_LIMIT: u64 = 1 << 30;
/// Entries of the OpenDML super index slot reserved in the header (256 GiB of video).
pub const SUPER_INDEX_ENTRIES: u32 = 256;
/// Frames per second written in the header when the channel does not say (`ts` is the truth).
pub const DEFAULT_FPS: f64 = 30.0;

const NO_SIZE: u32 = u32::MAX;

fn put_id(v: &mut Vec<u8>, id: &[u8; 4]) {
    v.extend_from_slice(id);
}

fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}

/// `rate / scale` for `fps`, and the frame duration in microseconds.
fn timing(fps: f64) -> (u32, u32, u32) {
    let fps = if fps.is_finite() && fps > 0.0 && fps < 1e6 {
        fps
    } else {
        DEFAULT_FPS
    };
    let (rate, scale) = if fps.fract() == 0.0 {
        (fps as u32, 1)
    } else {
        ((fps * 1000.0).round() as u32, 1000)
    };
    (rate, scale, (1e6 / fps).round() as u32)
}

/// The bytes before the first frame: `RIFF AVI `, `hdrl` (`avih`, one MJPEG video `strl`
/// with a super index slot, `odml`), and the start of `LIST movi`.
pub fn header_bytes(width: u32, height: u32, fps: f64) -> Vec<u8> {
    let (rate, scale, usec) = timing(fps);
    let mut v = Vec::with_capacity(8192);
    put_id(&mut v, b"RIFF");
    put32(&mut v, NO_SIZE);
    put_id(&mut v, b"AVI ");
    put_id(&mut v, b"LIST");
    let hdrl_size = v.len();
    put32(&mut v, 0);
    put_id(&mut v, b"hdrl");
    put_id(&mut v, b"avih");
    put32(&mut v, 56);
    for x in [
        usec,
        0,
        0,
        0x10,
        0,
        0,
        1,
        1 << 20,
        width,
        height,
        0,
        0,
        0,
        0,
    ] {
        put32(&mut v, x);
    }
    put_id(&mut v, b"LIST");
    let strl_size = v.len();
    put32(&mut v, 0);
    put_id(&mut v, b"strl");
    put_id(&mut v, b"strh");
    put32(&mut v, 56);
    put_id(&mut v, b"vids");
    put_id(&mut v, b"MJPG");
    for x in [0, 0, 0, scale, rate, 0, 0, 1 << 20, u32::MAX, 0] {
        put32(&mut v, x);
    }
    for x in [0, 0, width.min(0x7fff) as u16, height.min(0x7fff) as u16] {
        put16(&mut v, x);
    }
    put_id(&mut v, b"strf");
    put32(&mut v, 40);
    put32(&mut v, 40);
    put32(&mut v, width);
    put32(&mut v, height);
    put16(&mut v, 1);
    put16(&mut v, 24);
    put_id(&mut v, b"MJPG");
    put32(&mut v, width.saturating_mul(height).saturating_mul(3));
    for _ in 0..4 {
        put32(&mut v, 0);
    }
    put_id(&mut v, b"JUNK");
    put32(&mut v, 24 + 16 * SUPER_INDEX_ENTRIES);
    v.resize(v.len() + 24 + 16 * SUPER_INDEX_ENTRIES as usize, 0);
    let n = (v.len() - strl_size - 4) as u32;
    v[strl_size..strl_size + 4].copy_from_slice(&n.to_le_bytes());
    put_id(&mut v, b"LIST");
    put32(&mut v, 4 + 8 + 248);
    put_id(&mut v, b"odml");
    put_id(&mut v, b"dmlh");
    put32(&mut v, 248);
    v.resize(v.len() + 248, 0);
    let n = (v.len() - hdrl_size - 4) as u32;
    v[hdrl_size..hdrl_size + 4].copy_from_slice(&n.to_le_bytes());
    put_id(&mut v, b"LIST");
    put32(&mut v, NO_SIZE);
    put_id(&mut v, b"movi");
    v
}

fn at<T>(path: &Path, r: std::io::Result<T>) -> Result<T> {
    r.map_err(|e| Error::io(path, e))
}

fn write32(f: &File, path: &Path, pos: u64, x: u32) -> Result<()> {
    at(path, f.write_all_at(&x.to_le_bytes(), pos))
}

/// The `idx1` chunk for `frames` of the first segment, whose `movi` list starts at `movi_pos`.
fn idx1_bytes(frames: &[Frame], movi_pos: u64, id: [u8; 4]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + 16 * frames.len());
    put_id(&mut v, b"idx1");
    put32(&mut v, (16 * frames.len()) as u32);
    for f in frames {
        put_id(&mut v, &id);
        put32(&mut v, KEYFRAME);
        put32(&mut v, (f.chunk_start() - (movi_pos + 8)) as u32);
        put32(&mut v, f.len);
    }
    v
}

/// An OpenDML standard index chunk (`ix00`) for `frames` of one segment.
fn ix_bytes(frames: &[Frame], base: u64, id: [u8; 4], path: &Path) -> Result<Vec<u8>> {
    let mut v = Vec::with_capacity(32 + 8 * frames.len());
    put_id(&mut v, &[b'i', b'x', id[0], id[1]]);
    put32(&mut v, (24 + 8 * frames.len()) as u32);
    put16(&mut v, 2);
    v.extend_from_slice(&[0, 1]);
    put32(&mut v, frames.len() as u32);
    put_id(&mut v, &id);
    v.extend_from_slice(&base.to_le_bytes());
    put32(&mut v, 0);
    for f in frames {
        let off = u32::try_from(f.offset - base)
            .map_err(|_| Error::corrupt(path, CorruptProblem::SegmentOver4GiB))?;
        put32(&mut v, off);
        put32(&mut v, f.len);
    }
    Ok(v)
}

/// Writes the super index (`indx`, in the slot the header reserved) for `entries` of
/// (index chunk offset, index chunk size, frames).
fn write_super_index(f: &File, path: &Path, h: &Header, entries: &[(u64, u32, u32)]) -> Result<()> {
    let Some((pos, size, _)) = h.indx else {
        return Err(Error::corrupt(path, CorruptProblem::NoSuperIndexSlot));
    };
    let cap = (size.saturating_sub(24) / 16) as usize;
    if entries.len() > cap {
        return Err(Error::corrupt(
            path,
            CorruptProblem::SuperIndexFull {
                segments: entries.len(),
                room: cap,
            },
        ));
    }
    let mut v = Vec::with_capacity(8 + size as usize);
    put_id(&mut v, b"indx");
    put32(&mut v, size);
    put16(&mut v, 4);
    v.extend_from_slice(&[0, 0]);
    put32(&mut v, entries.len() as u32);
    put_id(&mut v, &h.frame_id());
    v.resize(v.len() + 12, 0);
    for (off, len, frames) in entries {
        v.extend_from_slice(&off.to_le_bytes());
        put32(&mut v, *len);
        put32(&mut v, *frames);
    }
    v.resize(8 + size as usize, 0);
    at(path, f.write_all_at(&v, pos))
}

/// Makes the file at `path` a finished AVI holding exactly `frames` (a prefix of what its
/// segments hold): cuts everything after the last frame, writes the indexes (`idx1` for a
/// single segment; `ix00` and the super index for several) and every size and count in the
/// headers, and syncs. `segments` are those the frames occupy and any after them (cut).
/// Returns the new file length.
pub fn write_trailer(
    f: &File,
    path: &Path,
    h: &Header,
    segments: &[Segment],
    frames: &[Frame],
) -> Result<u64> {
    let first = segments
        .first()
        .ok_or_else(|| Error::corrupt(path, CorruptProblem::NoMovi))?;
    let seg_of = |off: u64| {
        segments
            .iter()
            .rposition(|s| s.movi_pos <= off)
            .unwrap_or(0)
    };
    let last = frames.last().map_or(0, |fr| seg_of(fr.offset));
    let end = frames.last().map_or(first.movi_pos + 12, Frame::chunk_end);
    let id = h.frame_id();
    at(path, f.set_len(end))?;
    let seg = &segments[last];
    let new_len;
    if last == 0 {
        let idx1 = idx1_bytes(frames, first.movi_pos, id);
        at(path, f.write_all_at(&idx1, end))?;
        new_len = end + idx1.len() as u64;
        write32(
            f,
            path,
            first.movi_pos + 4,
            (end - first.movi_pos - 8) as u32,
        )?;
        if let Some((pos, _, true)) = h.indx {
            // A single segment needs no OpenDML index: a stale one must not be followed.
            at(path, f.write_all_at(b"JUNK", pos))?;
        }
    } else {
        let mine: Vec<Frame> = frames
            .iter()
            .filter(|fr| seg_of(fr.offset) == last)
            .copied()
            .collect();
        let ix = ix_bytes(&mine, seg.movi_pos, id, path)?;
        at(path, f.write_all_at(&ix, end))?;
        new_len = end + ix.len() as u64;
        write32(
            f,
            path,
            seg.movi_pos + 4,
            (new_len - seg.movi_pos - 8) as u32,
        )?;
        let mut entries = Vec::new();
        for (s, sg) in segments[..=last].iter().enumerate() {
            let n = frames.iter().filter(|fr| seg_of(fr.offset) == s).count() as u32;
            let (pos, size) = if s == last {
                (end, ix.len() as u32 - 8)
            } else {
                sg.ix.ok_or_else(|| {
                    Error::corrupt(path, CorruptProblem::SegmentWithoutIx { segment: s })
                })?
            };
            entries.push((pos, size + 8, n));
        }
        write_super_index(f, path, h, &entries)?;
    }
    at(path, f.set_len(new_len))?;
    write32(
        f,
        path,
        seg.riff_pos + 4,
        (new_len - seg.riff_pos - 8) as u32,
    )?;
    let n = frames.len() as u32;
    let in_first = frames.iter().filter(|fr| seg_of(fr.offset) == 0).count() as u32;
    if let Some(avih) = h.avih {
        write32(f, path, avih + 16, in_first)?;
    }
    if let Some(strh) = h.strh {
        write32(f, path, strh + 32, n)?;
    }
    if let Some(dmlh) = h.dmlh {
        write32(f, path, dmlh, n)?;
    }
    at(path, f.sync_all())?;
    Ok(new_len)
}

/// Appends JPEG frames to an MJPEG AVI file.
pub struct MjpgWriter {
    path: PathBuf,
    file: AppendFile,
    /// A second handle for the header and size patches (positional writes).
    patch: File,
    header: Header,
    segments: Vec<Segment>,
    frames: Vec<Frame>,
    riff_limit: u64,
    /// The rate written in the header (kept to rewrite it with the first frame's size).
    fps: f64,
}

impl MjpgWriter {
    /// Creates `path` (which must not exist) for frames of `width` x `height` at `fps`.
    pub fn create(
        path: &Path,
        width: u32,
        height: u32,
        fps: f64,
        buffer_bytes: usize,
    ) -> Result<MjpgWriter> {
        let mut file = AppendFile::create_new(path, buffer_bytes)?;
        let head = header_bytes(width, height, fps);
        file.append(&head)?;
        let layout = parse::parse(&head).map_err(|e| Error::at(path, e))?;
        let mut w = MjpgWriter::with(path, file, layout.header, layout.segments, Vec::new())?;
        w.fps = fps;
        Ok(w)
    }

    /// Opens a finished or recovered file to append after its last frame (its trailer is
    /// cut and written again at finish). A file with problems other than a missing trailer
    /// must be recovered first.
    pub fn open_append(path: &Path, buffer_bytes: usize) -> Result<MjpgWriter> {
        // Mapped, its pages released behind the walk (as `validate` reads it): resuming an
        // hour of video after a crash holds its frame list (16 bytes a frame), not the video.
        // SAFETY: nothing else writes the file while its recorder resumes it, and the map
        // is gone before the patches below.
        let l = {
            let (map, _) = unsafe { crate::io::map_possibly_empty(path) }?;
            let outline = parse::outline(map.as_deref().unwrap_or_default())
                .map_err(|e| Error::at(path, e))?;
            super::complete_mapped(map.as_ref(), outline)
        };
        if l.torn_at.is_some() || !l.header_ok {
            return Err(Error::AviNeedsRecovery {
                path: path.to_path_buf(),
                problems: l.problems,
            });
        }
        let patch = OpenOptions::new().write(true).open(path).at(path)?;
        let last = l.frames.last().map_or(0, |fr| l.segment_of(fr.offset));
        let end = l.frames_end(l.frames.len());
        at(path, patch.set_len(end))?;
        let seg = &l.segments[last];
        write32(&patch, path, seg.riff_pos + 4, NO_SIZE)?;
        write32(&patch, path, seg.movi_pos + 4, NO_SIZE)?;
        if let Some((pos, _, true)) = l.header.indx {
            // Only the closed segments stay in the super index.
            write32(&patch, path, pos + 12, last as u32)?;
        }
        at(path, patch.sync_all())?;
        drop(patch);
        let file = AppendFile::open_append(path, buffer_bytes)?;
        let mut segments = l.segments;
        segments.truncate(last + 1);
        segments[last].ix = None;
        MjpgWriter::with(path, file, l.header, segments, l.frames)
    }

    fn with(
        path: &Path,
        file: AppendFile,
        header: Header,
        segments: Vec<Segment>,
        frames: Vec<Frame>,
    ) -> Result<MjpgWriter> {
        let patch = OpenOptions::new().write(true).open(path).at(path)?;
        Ok(MjpgWriter {
            path: path.to_path_buf(),
            file,
            patch,
            header,
            segments,
            frames,
            riff_limit: RIFF_LIMIT,
            fps: DEFAULT_FPS,
        })
    }

    /// Closes RIFF segments at `bytes` instead of 1 GiB (tests: OpenDML files that fit CI).
    pub fn set_riff_limit(&mut self, bytes: u64) {
        self.riff_limit = bytes.max(4096);
    }

    /// Appends one JPEG frame as a `00dc` chunk.
    pub fn append(&mut self, jpeg: &[u8]) -> Result<()> {
        if jpeg.is_empty() {
            return Err(Error::EmptySample {
                channel: self.path.display().to_string(),
            });
        }
        let len = u32::try_from(jpeg.len())
            .ok()
            .filter(|&n| n <= MAX_FRAME_BYTES)
            .ok_or_else(|| {
                Error::corrupt(
                    &self.path,
                    CorruptProblem::FrameTooLarge {
                        bytes: jpeg.len(),
                        limit: MAX_FRAME_BYTES,
                    },
                )
            })?;
        if self.frames.is_empty() && self.segments.len() == 1 && self.header.width == 0 {
            self.size_from_first_frame(jpeg)?;
        }
        let seg = self.segments.last().expect("a writer always has a segment");
        let chunk = 8 + u64::from(len) + u64::from(len & 1);
        let seg_frames = self.frames.len() - self.frames_before(self.segments.len() - 1);
        // Room for the frame and the segment's index entries (and idx1 in the first).
        let trailer = 64 + 24 * (seg_frames as u64 + 1);
        if seg_frames > 0 && self.file.len() + chunk + trailer - seg.riff_pos > self.riff_limit {
            self.next_segment()?;
        }
        let offset = self.file.len() + 8;
        let mut head = Vec::with_capacity(8);
        put_id(&mut head, &self.header.frame_id());
        put32(&mut head, len);
        self.file.append(&head)?;
        self.file.append(jpeg)?;
        if len & 1 == 1 {
            self.file.append(&[0])?;
        }
        self.frames.push(Frame { offset, len });
        Ok(())
    }

    /// A channel whose shape does not give the frame size (`jpg` channels may declare `[]`):
    /// the header is written again with the first frame's size (its length does not change).
    fn size_from_first_frame(&mut self, jpeg: &[u8]) -> Result<()> {
        let Some((w, h)) = jpeg_size(jpeg) else {
            return Ok(()); // players read the size from the frames themselves
        };
        self.file.flush()?;
        let head = header_bytes(w, h, self.fps);
        at(&self.path, self.patch.write_all_at(&head, 0))?;
        self.header.width = w;
        self.header.height = h;
        Ok(())
    }

    fn frames_before(&self, seg: usize) -> usize {
        match self.segments.get(seg) {
            Some(s) => self.frames.partition_point(|f| f.offset < s.movi_pos),
            None => self.frames.len(),
        }
    }

    /// Closes the current segment (its `ix00`, `idx1` for the first, sizes, the super
    /// index) and starts a `RIFF AVIX` one.
    fn next_segment(&mut self) -> Result<()> {
        let s = self.segments.len() - 1;
        let mine = &self.frames[self.frames_before(s)..];
        let id = self.header.frame_id();
        let seg = self.segments[s].clone();
        let ix_pos = self.file.len();
        let ix = ix_bytes(mine, seg.movi_pos, id, &self.path)?;
        self.file.append(&ix)?;
        let movi_end = self.file.len();
        if s == 0 {
            let idx1 = idx1_bytes(mine, seg.movi_pos, id);
            self.file.append(&idx1)?;
        }
        let riff_end = self.file.len();
        self.file.flush()?;
        let (f, p) = (&self.patch, &self.path);
        write32(f, p, seg.movi_pos + 4, (movi_end - seg.movi_pos - 8) as u32)?;
        write32(f, p, seg.riff_pos + 4, (riff_end - seg.riff_pos - 8) as u32)?;
        self.segments[s].ix = Some((ix_pos, ix.len() as u32 - 8));
        self.segments[s].movi_end = movi_end;
        let mut entries = Vec::new();
        for k in 0..=s {
            let (pos, size) = self.segments[k].ix.expect("closed segments have an index");
            let n = self.frames_before(k + 1) - self.frames_before(k);
            entries.push((pos, size + 8, n as u32));
        }
        write_super_index(f, p, &self.header, &entries)?;
        self.header.indx = self.header.indx.map(|(pos, size, _)| (pos, size, true));
        let riff_pos = self.file.len();
        let mut head = Vec::with_capacity(24);
        put_id(&mut head, b"RIFF");
        put32(&mut head, NO_SIZE);
        put_id(&mut head, b"AVIX");
        put_id(&mut head, b"LIST");
        put32(&mut head, NO_SIZE);
        put_id(&mut head, b"movi");
        self.file.append(&head)?;
        self.segments.push(Segment {
            riff_pos,
            movi_pos: riff_pos + 12,
            movi_end: u64::MAX,
            ix: None,
        });
        Ok(())
    }

    /// Frames written.
    pub fn len(&self) -> u64 {
        self.frames.len() as u64
    }

    /// Whether no frame was written.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The append-only file under the writer.
    pub fn file(&self) -> &AppendFile {
        &self.file
    }

    /// The append-only file under the writer, mutable.
    pub fn file_mut(&mut self) -> &mut AppendFile {
        &mut self.file
    }

    /// Hands buffered frames to the kernel.
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// fsyncs the frames written (the trailer is written at finish).
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Writes the trailer (indexes, sizes, counts) and syncs.
    pub fn finish(mut self) -> Result<()> {
        self.file.sync()?;
        write_trailer(
            &self.patch,
            &self.path,
            &self.header,
            &self.segments,
            &self.frames,
        )?;
        Ok(())
    }
}

/// The size (width, height) in a JPEG's start-of-frame segment.
pub fn jpeg_size(jpeg: &[u8]) -> Option<(u32, u32)> {
    let mut pos = 2;
    if !jpeg.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    while pos + 4 <= jpeg.len() {
        if jpeg[pos] != 0xFF {
            return None;
        }
        let marker = jpeg[pos + 1];
        if marker == 0xFF {
            pos += 1; // fill byte
            continue;
        }
        let len = usize::from(u16::from_be_bytes([jpeg[pos + 2], jpeg[pos + 3]]));
        let sof = (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if sof {
            let b = jpeg.get(pos + 5..pos + 9)?;
            let h = u16::from_be_bytes([b[0], b[1]]);
            let w = u16::from_be_bytes([b[2], b[3]]);
            return Some((u32::from(w), u32::from(h)));
        }
        if marker == 0xDA || marker == 0xD9 || len < 2 {
            return None;
        }
        pos += 2 + len;
    }
    None
}
