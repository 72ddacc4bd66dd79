//! `mjpg` channels: MJPEG video in an AVI (RIFF) file, as upstream's collector writes its
//! camera (`camera/video.avi`, through OpenCV's `VideoWriter`, fourcc `MJPG`). Read natively,
//! without OpenCV:
//!
//! - [`parse`]: the layout from the file's bytes: the frame list from the OpenDML indexes
//!   (`indx` -> `ix00`, `RIFF AVIX` segments of files past 1 GiB), from `idx1`, or by scanning
//!   the `movi` chunks when the index is missing or the file was cut (a crashed writer leaves
//!   no index and placeholder sizes). Whatever an index lists is checked against the chunk it
//!   points at; whole frames after the last indexed one are found by scanning.
//! - [`lazy`]: a finished file opened without that pass (its `idx1` read entry by entry).
//! - [`MjpgReader`]: frames as zero-copy JPEG slices of the mapped file, random access.
//! - [`write`](mod@write): [`MjpgWriter`] (append-only, crash-aware) and the trailer that recovery writes.
//! - [`AviProblem`]: what the parser finds wrong, as values.
//! - [`repair`]: what `validate` reports and what `recover` does for such a channel.

pub mod lazy;
pub mod parse;
pub mod repair;
pub mod write;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::Mmap;

pub use crate::error::AviProblem;
pub use parse::{Frame, IndexSource, Layout};
pub use write::MjpgWriter;

use super::bounds::{self, Expected};
use crate::error::{Damage, Error, Result};

/// A readable MJPEG AVI file.
///
/// Its frames are every whole frame the parser finds (no more than `ts` counts); a frame
/// `ts` counts past them (a file cut short, a writer that crashed) is a
/// [`Error::DamagedSample`].
///
/// A file that looks finished opens without touching its frames ([`lazy`]): its length is
/// what `idx1` lists, and each read checks its own entry and chunk. A read that finds an
/// entry not matching its chunk parses the file whole, and from then on the reader answers
/// (length included) as one opened on a damaged file does.
pub struct MjpgReader {
    path: PathBuf,
    map: Option<Mmap>,
    /// The header and segments; the frame list too when `lazy` is `None`.
    outline: Box<Layout>,
    lazy: Option<lazy::Idx1View>,
    /// The whole parse, when made (at open, or on the first mismatch or `layout()`).
    full: OnceLock<Box<Layout>>,
    expected: Expected,
    /// Pages behind a read in order are released (see [`crate::mem::ReleaseBehind`]).
    behind: crate::mem::ReleaseBehind,
}

impl MjpgReader {
    /// Maps `path` and finds its frames.
    pub fn open(path: &Path) -> Result<MjpgReader> {
        // SAFETY: a file cut while mapped raises SIGBUS on access past its end, the same
        // contract as the `raw` reader (a trace is not cut while it is read, except by
        // `recover`, which readers do not run beside).
        let (map, _) = unsafe { crate::io::map_possibly_empty(path) }?;
        let b = map.as_deref().unwrap_or(&[]);
        let outline = parse::outline(b).map_err(|e| Error::at(path, e))?;
        let lazy = lazy::Idx1View::new(b, &outline);
        let full = OnceLock::new();
        if lazy.is_none() {
            let _ = full.set(Box::new(complete_mapped(map.as_ref(), outline.clone())));
        }
        Ok(MjpgReader {
            path: path.to_path_buf(),
            map,
            outline: Box::new(outline),
            lazy,
            full,
            expected: None,
            behind: Default::default(),
        })
    }

    /// Reads the video against the sensor's `ts` count (see [`Expected`]).
    pub fn expecting(mut self, expected: Expected) -> MjpgReader {
        self.expected = expected;
        self
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// What parsing found (frames, index, problems): parses the file whole when it was
    /// opened lazily.
    pub fn layout(&self) -> &Layout {
        self.full
            .get_or_init(|| Box::new(complete_mapped(self.map.as_ref(), (*self.outline).clone())))
    }

    /// Whether the frame list is read from the index as frames are asked for (the file
    /// looked finished and no read has found an entry that does not match its chunk).
    pub fn is_lazy(&self) -> bool {
        self.lazy.is_some() && self.full.get().is_none()
    }

    /// Whole frames in the file (as the index lists them while the reader is lazy).
    fn whole(&self) -> u64 {
        match (self.full.get(), self.lazy) {
            (Some(l), _) => l.frames.len() as u64,
            (None, Some(v)) => v.count(),
            (None, None) => 0,
        }
    }

    /// Frames: the whole ones in the file, no more than `ts` counts.
    pub fn len(&self) -> u64 {
        bounds::agreed(self.whole(), self.expected)
    }

    /// Whether the file holds no frame.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frame `index`'s JPEG bytes, borrowed from the mapped file. Every whole frame can be
    /// read, also one past `ts` (a frame a crash left without its timestamp).
    pub fn frame(&self, index: u64) -> Result<&[u8]> {
        let b = self.bytes();
        if let (None, Some(v)) = (self.full.get(), self.lazy) {
            if let Some(f) = v.frame(b, index, &self.outline) {
                // The view checked the chunk against the file's length.
                return Ok(self.slice(index, f));
            }
            if index >= v.count() {
                return Err(self.unreadable(index, v.count()));
            }
            // An entry that does not match its chunk: the whole parse decides.
        }
        let layout = self.layout();
        let frames = layout.frames.len() as u64;
        let f = usize::try_from(index)
            .ok()
            .and_then(|i| layout.frames.get(i))
            .ok_or_else(|| self.unreadable(index, frames))?;
        // parse checked every frame against the file's length.
        Ok(self.slice(index, *f))
    }

    fn slice(&self, index: u64, f: Frame) -> &[u8] {
        if let Some(m) = &self.map {
            self.behind.read(m, index, f.offset);
        }
        &self.bytes()[f.offset as usize..f.offset as usize + f.len as usize]
    }

    fn unreadable(&self, index: u64, frames: u64) -> Error {
        bounds::unreadable(&self.path, index, self.len(), frames, self.expected, || {
            Damage::NoFrame { frames }
        })
    }

    /// Every frame's JPEG bytes, in order.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> + '_ {
        // `len` can drop when a lazy read finds a damaged entry: asked again each time.
        (0..).map_while(|i| (i < self.len()).then(|| self.frame(i).ok()).flatten())
    }

    /// Frame `index` decoded to `height x width x 3` RGB bytes (gray frames are expanded).
    #[cfg(feature = "jpeg")]
    pub fn decode(&self, index: u64) -> Result<Vec<u8>> {
        let jpeg = self.frame(index)?;
        decode_rgb(jpeg).map_err(|e| bounds::undecodable_jpeg(&self.path, index, jpeg, e))
    }
}

/// [`parse::complete`] over a mapped file, releasing the pages behind the walk as it goes
/// ([`crate::mem::ReleaseBehind`]): the whole parse touches every frame's chunk header, so
/// without this an hour of video would stay resident (`validate`, a damaged file's reader).
pub(crate) fn complete_mapped(map: Option<&Mmap>, outline: Layout) -> Layout {
    let Some(m) = map else {
        return parse::complete(&[], outline);
    };
    let behind = crate::mem::ReleaseBehind::default();
    let mut k = 0;
    parse::complete_with(m, outline, &mut |pos| {
        behind.read(m, k, pos);
        k += 1;
    })
}

/// A JPEG decoded to interleaved RGB (`H x W x 3`), as upstream's reader returns a video
/// frame after its BGR -> RGB conversion.
#[cfg(feature = "jpeg")]
pub fn decode_rgb(jpeg: &[u8]) -> Result<Vec<u8>> {
    let d = crate::jpeg::decode_jpeg(jpeg)?;
    Ok(match d.channels {
        1 => d.pixels.iter().flat_map(|&p| [p, p, p]).collect(),
        _ => d.pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::parse::parse;
    use super::repair::{recover, AviState};
    use super::*;
    use crate::format::meta::{ChannelFormat, ChannelMeta};
    use crate::format::DType;

    fn frame(i: usize) -> Vec<u8> {
        // Odd and even lengths: the padding byte must be handled both ways.
        let mut v = vec![0xFF, 0xD8];
        v.extend((0..100 + i * 7).map(|k| (k * 31 + i) as u8));
        v
    }

    fn write(path: &Path, n: usize, riff_limit: Option<u64>) -> Vec<Vec<u8>> {
        let mut w = MjpgWriter::create(path, 64, 48, 30.0, 4096).unwrap();
        if let Some(l) = riff_limit {
            w.set_riff_limit(l);
        }
        let frames: Vec<_> = (0..n).map(frame).collect();
        for f in &frames {
            w.append(f).unwrap();
        }
        w.finish().unwrap();
        frames
    }

    fn read_all(path: &Path) -> (Vec<Vec<u8>>, Layout) {
        let r = MjpgReader::open(path).unwrap();
        (r.frames().map(<[u8]>::to_vec).collect(), r.layout().clone())
    }

    #[test]
    fn a_finished_file_reads_back_through_its_index() {
        let dir = tempfile::tempdir().unwrap();
        for (n, limit, source) in [
            (0, None, IndexSource::Idx1),
            (7, None, IndexSource::Idx1),
            (40, Some(4096), IndexSource::OpenDml),
        ] {
            let p = dir.path().join(format!("v{n}.avi"));
            let frames = write(&p, n, limit);
            let (got, l) = read_all(&p);
            assert_eq!(got, frames, "{n} frames");
            assert_eq!(l.problems, Vec::<AviProblem>::new(), "{n} frames");
            assert_eq!((l.source, l.indexed), (source, n), "{n} frames");
            if limit.is_some() {
                assert!(l.segments.len() > 3, "{} segments", l.segments.len());
            }
            assert_eq!(l.header.length as usize, n);
            assert_eq!((l.header.width, l.header.height), (64, 48));
        }
    }

    #[test]
    fn a_lazy_reader_answers_as_the_whole_parse_once_an_entry_lies() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.avi");
        let frames = write(&p, 12, None);
        let r = MjpgReader::open(&p).unwrap();
        assert!(r.is_lazy());
        assert_eq!(r.len(), 12);
        assert_eq!(r.frame(11).unwrap(), &frames[11][..]);
        assert!(r.frame(12).is_err());
        // Frame 5's idx1 entry names a length its chunk does not have.
        let mut b = std::fs::read(&p).unwrap();
        let (pos, _) = parse(&b).unwrap().idx1.unwrap();
        let e = (pos + 8 + 16 * 5 + 12) as usize;
        b[e] ^= 1;
        std::fs::write(&p, &b).unwrap();
        let whole = parse(&b).unwrap();
        assert!(!whole.problems.is_empty());
        let r = MjpgReader::open(&p).unwrap().expecting(Some(12));
        assert!(r.is_lazy());
        assert_eq!(r.frame(4).unwrap(), &frames[4][..]);
        assert_eq!(r.len(), 12, "the index's count until a read finds the lie");
        // The scan after the lying entry finds the frames still whole.
        assert_eq!(r.frame(5).unwrap(), &frames[5][..]);
        assert!(!r.is_lazy());
        assert_eq!(r.len(), whole.frames.len() as u64);
        assert_eq!(r.layout(), &whole);
        let fresh = MjpgReader::open(&p).unwrap();
        assert_eq!(fresh.frames().count(), whole.frames.len());
    }

    #[test]
    fn every_cut_keeps_the_whole_frames_and_recover_finishes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let meta = ChannelMeta::new(ChannelFormat::Mjpg, DType::U1, vec![48, 64, 3], "");
        for limit in [None, Some(4096)] {
            let p = dir.path().join("v.avi");
            let _ = std::fs::remove_file(&p);
            let frames = write(&p, 30, limit);
            let whole = std::fs::read(&p).unwrap();
            let cut_path = dir.path().join("cut.avi");
            let mut last = usize::MAX;
            for cut in (0..whole.len()).step_by(13).chain([whole.len() - 1]) {
                std::fs::write(&cut_path, &whole[..cut]).unwrap();
                let (got, l) = match parse(&whole[..cut]) {
                    Ok(l) => (read_all(&cut_path).0, l),
                    Err(e) => panic!("cut at {cut}: {e}"),
                };
                assert_eq!(got[..], frames[..got.len()], "cut at {cut}");
                if cut > 0 && cut < whole.len() {
                    assert!(!l.problems.is_empty(), "cut at {cut} not flagged");
                }
                let keep = got.len().saturating_sub(cut % 2);
                let state = AviState::read(&cut_path).unwrap();
                recover(&cut_path, &meta, &state, keep as u64).unwrap();
                let (again, l) = read_all(&cut_path);
                assert_eq!(again[..], frames[..keep], "recovered from a cut at {cut}");
                assert_eq!(
                    l.problems,
                    Vec::<AviProblem>::new(),
                    "recovered from a cut at {cut}"
                );
                assert_eq!(l.indexed, keep, "cut at {cut}");
                let state = AviState::read(&cut_path).unwrap();
                assert_eq!(
                    recover(&cut_path, &meta, &state, keep as u64).unwrap(),
                    None
                );
                last = last.min(got.len());
            }
            assert_eq!(last, 0);
        }
    }

    /// `validate` reads the file through a map whose pages it releases behind the parse
    /// (issue 25): it must find exactly what parsing the file's bytes finds, for every cut
    /// of a plain and of an OpenDML file, and the walk must come to the frames in file order
    /// (what lets it release them).
    #[test]
    fn the_mapped_state_finds_what_parsing_the_bytes_finds() {
        let dir = tempfile::tempdir().unwrap();
        for limit in [None, Some(4096)] {
            let p = dir.path().join("v.avi");
            let _ = std::fs::remove_file(&p);
            write(&p, 30, limit);
            let whole = std::fs::read(&p).unwrap();
            let cut_path = dir.path().join("cut.avi");
            for cut in (0..whole.len()).step_by(29).chain([whole.len()]) {
                std::fs::write(&cut_path, &whole[..cut]).unwrap();
                let want = parse(&whole[..cut]).unwrap();
                match AviState::read(&cut_path).unwrap() {
                    AviState::Parsed(l) => assert_eq!(*l, want, "cut at {cut}"),
                    other => panic!("cut at {cut}: {other:?}"),
                }
                let mut seen = Vec::new();
                let o = parse::outline(&whole[..cut]).unwrap();
                parse::complete_with(&whole[..cut], o, &mut |pos| seen.push(pos));
                let frames: Vec<u64> = seen
                    .iter()
                    .copied()
                    .filter(|&pos| want.frames.iter().any(|f| f.chunk_start() == pos))
                    .collect();
                assert!(frames.is_sorted(), "cut at {cut}: {seen:?}");
                assert!(frames.len() >= want.frames.len(), "cut at {cut}");
            }
        }
        assert!(matches!(
            AviState::read(&dir.path().join("none.avi")).unwrap(),
            AviState::Missing
        ));
        std::fs::write(dir.path().join("gif.avi"), b"GIF89a......").unwrap();
        assert!(matches!(
            AviState::read(&dir.path().join("gif.avi")).unwrap(),
            AviState::Foreign
        ));
    }

    #[test]
    fn appending_to_a_finished_file_continues_it() {
        let dir = tempfile::tempdir().unwrap();
        for limit in [None, Some(4096)] {
            let p = dir.path().join("v.avi");
            let _ = std::fs::remove_file(&p);
            let mut frames = write(&p, 12, limit);
            let mut w = MjpgWriter::open_append(&p, 4096).unwrap();
            if let Some(l) = limit {
                w.set_riff_limit(l);
            }
            for i in 12..30 {
                w.append(&frame(i)).unwrap();
                frames.push(frame(i));
            }
            w.finish().unwrap();
            let (got, l) = read_all(&p);
            assert_eq!(got, frames);
            assert_eq!(l.problems, Vec::<AviProblem>::new());
        }
    }

    #[test]
    fn a_channel_without_a_frame_size_takes_the_first_frames() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.avi");
        // SOI, an APP0 segment to skip, then SOF0 of 48 rows x 64 columns.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46];
        jpeg.extend([0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 48, 0x00, 64, 3]);
        jpeg.extend([0xFF, 0xD9]);
        assert_eq!(super::write::jpeg_size(&jpeg), Some((64, 48)));
        let mut w = MjpgWriter::create(&p, 0, 0, 25.0, 4096).unwrap();
        w.append(&jpeg).unwrap();
        w.append(&frame(1)).unwrap();
        w.finish().unwrap();
        let (got, l) = read_all(&p);
        assert_eq!(got.len(), 2);
        assert_eq!((l.header.width, l.header.height), (64, 48));
        assert_eq!(l.header.fps(), 25.0);
        assert_eq!(l.problems, Vec::<AviProblem>::new());
        assert_eq!(super::write::jpeg_size(b"\xFF\xD8\xFF\xDA"), None);
    }

    #[test]
    fn lying_sizes_are_refused_not_trusted() {
        assert!(parse(b"GIF89a......").is_err());
        let mut b = super::write::header_bytes(64, 48, 30.0);
        b.extend_from_slice(b"00dc");
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b.extend_from_slice(&[1, 2, 3]);
        let l = parse(&b).unwrap();
        assert!(l.frames.is_empty());
        assert!(l.torn_at.is_some(), "{:?}", l.problems);
    }
}
