//! Opening a finished AVI without touching its frames: the frame list read from `idx1`
//! entry by entry, as frames are asked for.
//!
//! [`parse`](super::parse::parse) checks every index entry against the chunk it points at,
//! which touches every frame's page (41 ms for an hour of 30 Hz video). A reader needs no
//! such pass when the file looks finished: [`Idx1View::new`] takes a file with one RIFF
//! segment, no problem in its outline, an `idx1` of exactly the stream header's frame
//! count, whose first and last entries match their chunks and whose last frame ends where
//! the `movi` list ends (so no unindexed frame follows). Each frame read then checks its
//! own entry and chunk header (the page the read touches anyway); one that does not match
//! sends the reader to the full parse, whose answer holds from then on. Anything else (a
//! cut file, OpenDML segments, other streams in `idx1`) is parsed whole at open, as before.
//! `validate` always parses whole (`repair::check`).

use super::parse::{chunk_matches, id_at, u32_at, Frame, Layout, MAX_FRAMES};

/// A finished single-segment file's `idx1`, read an entry at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idx1View {
    /// Offset of the first entry.
    entries: u64,
    /// How many entries (all the video stream's frames).
    count: u64,
    /// What entry offsets are relative to (the `movi` fourcc, or 0 for absolute offsets).
    base: u64,
}

impl Idx1View {
    /// The view of `l`'s `idx1` (an [`outline`](super::parse::outline) of `b`), or `None`
    /// when the file must be parsed whole.
    pub fn new(b: &[u8], l: &Layout) -> Option<Idx1View> {
        let (pos, size) = l.idx1?;
        let [seg] = &l.segments[..] else {
            return None;
        };
        if !l.problems.is_empty() || !l.header_ok || l.torn_at.is_some() || size % 16 != 0 {
            return None;
        }
        let count = u64::from(size / 16);
        if count == 0 || count != u64::from(l.header.length) || count > MAX_FRAMES as u64 {
            return None;
        }
        let movi = seg.movi_pos + 8;
        let mut view = Idx1View {
            entries: pos + 8,
            count,
            base: movi,
        };
        let (id, off, len) = view.entry(b, 0)?;
        if !l.header.is_frame_id(&id) {
            return None;
        }
        if !chunk_matches(b, movi + u64::from(off), len, l) {
            view.base = 0;
        }
        let first = view.frame(b, 0, l)?;
        let last = view.frame(b, count - 1, l)?;
        (first.chunk_start() >= movi + 4 && last.chunk_end() == seg.movi_end).then_some(view)
    }

    /// Frames the index lists.
    pub fn count(&self) -> u64 {
        self.count
    }

    fn entry(&self, b: &[u8], k: u64) -> Option<([u8; 4], u32, u32)> {
        let e = self.entries + 16 * k;
        Some((id_at(b, e)?, u32_at(b, e + 8)?, u32_at(b, e + 12)?))
    }

    /// Frame `k` as its entry lists it, when the entry is a frame's and its chunk header
    /// matches (id, size, within the file); `None` otherwise.
    pub fn frame(&self, b: &[u8], k: u64, l: &Layout) -> Option<Frame> {
        if k >= self.count {
            return None;
        }
        let (id, off, len) = self.entry(b, k)?;
        let chunk = self.base + u64::from(off);
        (l.header.is_frame_id(&id) && chunk_matches(b, chunk, len, l)).then_some(Frame {
            offset: chunk + 8,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::{outline, parse, IndexSource};
    use super::super::MjpgWriter;
    use super::*;

    fn finished(n: usize) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.avi");
        let mut w = MjpgWriter::create(&p, 64, 48, 30.0, 4096).unwrap();
        for i in 0..n {
            let mut f = vec![0xFF, 0xD8];
            f.extend((0..50 + i).map(|k| k as u8));
            w.append(&f).unwrap();
        }
        w.finish().unwrap();
        std::fs::read(&p).unwrap()
    }

    #[test]
    fn a_finished_file_is_read_through_its_idx1_entry_by_entry() {
        let b = finished(9);
        let full = parse(&b).unwrap();
        assert_eq!(full.source, IndexSource::Idx1);
        let l = outline(&b).unwrap();
        assert!(l.frames.is_empty());
        let v = Idx1View::new(&b, &l).expect("a finished file opens lazily");
        assert_eq!(v.count(), 9);
        let lazy: Vec<_> = (0..9).map(|k| v.frame(&b, k, &l).unwrap()).collect();
        assert_eq!(lazy, full.frames);
        assert_eq!(v.frame(&b, 9, &l), None);
    }

    #[test]
    fn a_file_that_does_not_look_finished_is_parsed_whole() {
        let b = finished(9);
        // Cut inside the last frame: the outline has problems.
        let cut = &b[..b.len() - 200];
        assert_eq!(Idx1View::new(cut, &outline(cut).unwrap()), None);
        // The stream header counts another frame than idx1 lists.
        let l = outline(&b).unwrap();
        let strh = l.header.strh.unwrap() as usize;
        let mut other = b.clone();
        other[strh + 32..strh + 36].copy_from_slice(&8u32.to_le_bytes());
        assert_eq!(Idx1View::new(&other, &outline(&other).unwrap()), None);
        // The last entry points at the wrong chunk.
        let (pos, size) = l.idx1.unwrap();
        let last = (pos + 8 + u64::from(size) - 16) as usize;
        let mut wrong = b.clone();
        wrong[last + 8] ^= 4;
        assert_eq!(Idx1View::new(&wrong, &outline(&wrong).unwrap()), None);
    }

    #[test]
    fn a_middle_entry_that_lies_is_found_when_its_frame_is_read() {
        let b = finished(9);
        let l = outline(&b).unwrap();
        let (pos, _) = l.idx1.unwrap();
        let mut wrong = b.clone();
        let e = (pos + 8 + 16 * 4) as usize;
        wrong[e + 12] ^= 1; // frame 4's length
        let lw = outline(&wrong).unwrap();
        let v = Idx1View::new(&wrong, &lw).expect("first and last entries are fine");
        assert!(v.frame(&wrong, 3, &lw).is_some());
        assert_eq!(v.frame(&wrong, 4, &lw), None);
    }
}
