//! `mjpg` channels: MJPEG video in an AVI (RIFF) file, as upstream's collector writes its
//! camera (`camera/video.avi`, through OpenCV's `VideoWriter`, fourcc `MJPG`). Read natively,
//! without OpenCV:
//!
//! - [`parse`]: the layout from the file's bytes: the frame list from the OpenDML indexes
//!   (`indx` -> `ix00`, `RIFF AVIX` segments of files past 1 GiB), from `idx1`, or by scanning
//!   the `movi` chunks when the index is missing or the file was cut (a crashed writer leaves
//!   no index and placeholder sizes). Whatever an index lists is checked against the chunk it
//!   points at; whole frames after the last indexed one are found by scanning.
//! - [`MjpgReader`]: frames as zero-copy JPEG slices of the mapped file, random access.
//! - [`write`](mod@write): [`MjpgWriter`] (append-only, crash-aware) and the trailer that recovery writes.
//! - [`AviProblem`]: what the parser finds wrong, as values.
//! - [`repair`]: what `validate` reports and what `recover` does for such a channel.

pub mod parse;
pub mod repair;
pub mod write;

use std::path::{Path, PathBuf};

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
pub struct MjpgReader {
    path: PathBuf,
    map: Option<Mmap>,
    layout: Layout,
    expected: Expected,
}

impl MjpgReader {
    /// Maps `path` and finds its frames.
    pub fn open(path: &Path) -> Result<MjpgReader> {
        // SAFETY: a file cut while mapped raises SIGBUS on access past its end, the same
        // contract as the `raw` reader (a trace is not cut while it is read, except by
        // `recover`, which readers do not run beside).
        let (map, _) = unsafe { crate::io::map_possibly_empty(path) }?;
        let layout = parse::parse(map.as_deref().unwrap_or(&[])).map_err(|e| Error::at(path, e))?;
        Ok(MjpgReader {
            path: path.to_path_buf(),
            map,
            layout,
            expected: None,
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

    /// What parsing found (frames, index, problems).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Frames: the whole ones in the file, no more than `ts` counts.
    pub fn len(&self) -> u64 {
        bounds::agreed(self.layout.frames.len() as u64, self.expected)
    }

    /// Whether the file holds no frame.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frame `index`'s JPEG bytes, borrowed from the mapped file. Every whole frame can be
    /// read, also one past `ts` (a frame a crash left without its timestamp).
    pub fn frame(&self, index: u64) -> Result<&[u8]> {
        let frames = self.layout.frames.len() as u64;
        let f = usize::try_from(index)
            .ok()
            .and_then(|i| self.layout.frames.get(i))
            .ok_or_else(|| {
                bounds::unreadable(&self.path, index, self.len(), frames, self.expected, || {
                    Damage::NoFrame { frames }
                })
            })?;
        let map = self.map.as_deref().unwrap_or(&[]);
        // parse checked every frame against the file's length.
        Ok(&map[f.offset as usize..f.offset as usize + f.len as usize])
    }

    /// Every frame's JPEG bytes, in order.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.frame(i).expect("in range"))
    }

    /// Frame `index` decoded to `height x width x 3` RGB bytes (gray frames are expanded).
    #[cfg(feature = "jpeg")]
    pub fn decode(&self, index: u64) -> Result<Vec<u8>> {
        decode_rgb(self.frame(index)?)
    }
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
