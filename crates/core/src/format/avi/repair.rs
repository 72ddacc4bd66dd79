//! What `validate` finds in an `mjpg` channel and what `recover` does to it.

use std::fs::{self, OpenOptions};
use std::path::Path;

use super::parse::{self, Layout};
use super::write::{self, MjpgWriter, DEFAULT_FPS};
use crate::error::{CorruptProblem, Error, IoContext, Result};
use crate::format::meta::ChannelMeta;
use crate::format::problem::{Checked, CutAction, Depth, EmptyVideoCause, OnFrames, Problem};

/// The state of one `mjpg` file.
#[derive(Debug)]
pub enum AviState {
    /// No file.
    Missing,
    /// Not an AVI file at all: neither counted nor touched.
    Foreign,
    /// An AVI file and what parsing found.
    Parsed(Box<Layout>),
}

impl AviState {
    /// Reads the file at `path`: mapped, its pages released behind the parse, so the
    /// memory this takes does not grow with the video (only its frame list does, 16 bytes a
    /// frame).
    pub fn read(path: &Path) -> Result<AviState> {
        match fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AviState::Missing),
            Err(e) => return Err(Error::io(path, e)),
            Ok(_) => {}
        }
        // SAFETY: as for the reader (`MjpgReader::open`): a video is append-only while it is
        // read; `recover` cuts it only after this map is gone (the state keeps no bytes).
        let (map, _) = unsafe { crate::io::map_possibly_empty(path) }?;
        Ok(match parse::outline(map.as_deref().unwrap_or_default()) {
            Ok(o) => AviState::Parsed(Box::new(super::complete_mapped(map.as_ref(), o))),
            Err(_not_avi) => AviState::Foreign,
        })
    }

    /// Whole frames, and the problems to report.
    pub fn summary(&self) -> (u64, Vec<Problem>) {
        match self {
            AviState::Missing => (0, vec![Problem::FileMissing]),
            AviState::Foreign => (0, vec![Problem::NotAvi]),
            AviState::Parsed(l) => (
                l.frames.len() as u64,
                l.problems.iter().cloned().map(Problem::Avi).collect(),
            ),
        }
    }
}

/// Checks the `mjpg` channel file `path`. The plan is `None` for a file that is not AVI:
/// recovery neither counts nor cuts it.
pub(crate) fn check(
    path: &Path,
    depth: Depth,
    problems: &mut Vec<Problem>,
    on_frames: OnFrames,
) -> Result<Checked<Option<AviState>>> {
    let state = AviState::read(path)?;
    let (mut n, found) = state.summary();
    problems.extend(found);
    // A frame a power cut left zero-filled ends what recovery keeps, as a cut one does.
    if let AviState::Parsed(l) = &state {
        if let Some(k) = first_zero_filled(path, l)? {
            problems.push(Problem::ZeroFilledFrame { frame: k });
            n = k as u64;
        }
    }
    if depth == Depth::Deep {
        problems.extend(deep_check(path, &state, on_frames)?);
    }
    let plan = match state {
        AviState::Foreign => None,
        s => Some(s),
    };
    Ok(Checked {
        complete: n,
        disk_bytes: crate::io::file_len(path)?.unwrap_or(0),
        plan,
    })
}

/// The first frame of `l` that is zero-filled (see [`crate::error::zero_filled`]): two
/// reads of a few bytes per frame.
fn first_zero_filled(path: &Path, l: &Layout) -> Result<Option<usize>> {
    use std::os::unix::fs::FileExt;
    const RUN: usize = crate::error::ZERO_RUN;
    if l.frames.is_empty() {
        return Ok(None);
    }
    let file = fs::File::open(path).at(path)?;
    let mut ends = [0u8; 2 * RUN];
    for (k, f) in l.frames.iter().enumerate() {
        if (f.len as usize) < RUN {
            continue;
        }
        let (head, tail) = ends.split_at_mut(RUN);
        file.read_exact_at(head, f.offset).at(path)?;
        file.read_exact_at(tail, f.offset + u64::from(f.len) - RUN as u64)
            .at(path)?;
        if crate::error::zero_filled(&ends) {
            return Ok(Some(k));
        }
    }
    Ok(None)
}

/// `validate --deep`: every frame is a whole JPEG (starts with SOI, ends with EOI before any
/// padding) and, with the `jpeg` feature, decodes. `on_frames` hears `(done, total, bytes)`.
pub(crate) fn deep_check(
    path: &Path,
    state: &AviState,
    on_frames: OnFrames,
) -> Result<Vec<Problem>> {
    let AviState::Parsed(l) = state else {
        return Ok(Vec::new());
    };
    if l.frames.is_empty() {
        return Ok(Vec::new());
    }
    // SAFETY: an `mjpg` file is appended to, and cut only by `recover`, which a deep check
    // does not run beside (the readers map it under the same contract).
    let (map, _) = unsafe { crate::io::map_possibly_empty(path)? };
    let bytes: &[u8] = map.as_deref().unwrap_or_default();
    let total = l.frames.len() as u64;
    // The parse checked every frame against the bytes it read; a file cut since is no frame.
    let frame = |k: u64| {
        let f = l.frames[k as usize];
        bytes.get(f.offset as usize..f.offset as usize + f.len as usize)
    };
    // Every frame, on every core; each bad one is reported. Pages well behind the frames
    // done are released, so an hour of video holds no more of it than a second (as in
    // `lzmaf::check`: a page dropped while a slow chunk still reads it is faulted in again).
    let behind = crate::mem::ReleaseBehind::default();
    let mut calls = 0u64;
    let bad = crate::format::deep::check_frames(
        total,
        false,
        |k| frame(k).map_or(0, |f| f.len() as u64),
        |k| check_frame(frame(k), k as usize),
        &mut |done, b| {
            on_frames(done, total, b);
            if let (Some(m), Some(f)) = (
                &map,
                l.frames
                    .get(done.saturating_sub(crate::format::deep::max_in_flight()) as usize),
            ) {
                behind.read(m, calls, f.offset);
                calls += 1;
            }
        },
    );
    let bytes_total = (0..total)
        .map(|k| frame(k).map_or(0, |f| f.len() as u64))
        .sum();
    on_frames(total, total, bytes_total);
    Ok(bad.into_iter().map(|(_, p)| p).collect())
}

/// A frame is a whole JPEG (starts with SOI, ends with EOI before any padding) and, with the
/// `jpeg` feature, decodes strictly ([`crate::jpeg::check_jpeg_strict`]: damaged scan data
/// that a lenient decode would paper over is reported).
fn check_frame(f: Option<&[u8]>, k: usize) -> Option<Problem> {
    let Some(f) = f else {
        return Some(Problem::FrameNotJpeg { frame: k });
    };
    let body = match f.iter().rposition(|&b| b != 0) {
        Some(end) => &f[..=end],
        None => f,
    };
    if !f.starts_with(&[0xFF, 0xD8]) || !body.ends_with(&[0xFF, 0xD9]) {
        return Some(Problem::FrameNotJpeg { frame: k });
    }
    #[cfg(feature = "jpeg")]
    if let Err(e) = crate::jpeg::check_jpeg_strict(f, crate::jpeg::DEFAULT_MAX_PIXELS) {
        return Some(Problem::JpegUndecodable {
            frame: k,
            source: e,
        });
    }
    None
}

/// The frame size and rate a new file for `meta` gets: shape `[height, width, 3]`, `fps`
/// from upstream's `args` when present.
pub fn header_params(meta: &ChannelMeta) -> (u32, u32, f64) {
    let dim = |i: usize| {
        meta.shape
            .get(i)
            .and_then(|&d| u32::try_from(d).ok())
            .unwrap_or(0)
    };
    let fps = meta
        .args
        .as_ref()
        .and_then(|a| a.get("fps"))
        .and_then(|v| v.as_f64())
        .unwrap_or(DEFAULT_FPS);
    (dim(1), dim(0), fps)
}

/// Makes the file at `path` a finished AVI of its first `keep` frames (recovery). Returns
/// what was done, or `None` when the file already was exactly that.
pub fn recover(
    path: &Path,
    meta: &ChannelMeta,
    state: &AviState,
    keep: u64,
) -> Result<Option<CutAction>> {
    let fresh = |why: EmptyVideoCause| -> Result<Option<CutAction>> {
        let (w, h, fps) = header_params(meta);
        let tmp = path.with_extension("avi..recover");
        let _ = fs::remove_file(&tmp);
        MjpgWriter::create(&tmp, w, h, fps, 64 << 10)?.finish()?;
        fs::rename(&tmp, path).at(path)?;
        Ok(Some(CutAction::EmptyVideo { why }))
    };
    let l = match state {
        AviState::Missing => return fresh(EmptyVideoCause::Missing),
        AviState::Foreign => return Ok(None),
        AviState::Parsed(l) => l,
    };
    if !l.header_ok || l.segments.is_empty() {
        if keep > 0 {
            return Err(Error::corrupt(path, CorruptProblem::NoFramesToKeep));
        }
        return fresh(EmptyVideoCause::HeaderCut { len: l.file_len });
    }
    let keep = usize::try_from(keep)
        .unwrap_or(usize::MAX)
        .min(l.frames.len());
    let finished = l.problems.is_empty() && l.indexed == l.frames.len();
    if finished && keep == l.frames.len() {
        return Ok(None);
    }
    let f = OpenOptions::new().write(true).open(path).at(path)?;
    let new_len = write::write_trailer(&f, path, &l.header, &l.segments, &l.frames[..keep])?;
    Ok(Some(CutAction::AviRebuilt {
        kept: keep,
        whole: l.frames.len(),
        from: l.file_len,
        to: new_len,
        torn_at: l.torn_at,
    }))
}
