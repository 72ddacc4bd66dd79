//! What `validate` finds in an `lzmaf` channel (index against data, frames past the index,
//! a torn frame; with `--deep` every frame decompressed) and what `recover` does to it (cut
//! the data after the last kept frame, cut or rewrite the index).

use std::fs;
use std::path::Path;

use super::{index_path, read_index_bytes, scan_frames, trusted_prefix};
use crate::error::{IoContext, Result};
use crate::format::lzma;
use crate::format::problem::{Checked, Cut, CutAction, Depth, OnFrames, Problem};
use crate::io::{file_len, truncate_synced};

/// What recovery must know to cut an `lzmaf` channel.
#[derive(Debug)]
pub(crate) struct LzmafPlan {
    /// Offsets of the channel's whole frames (index prefix plus re-found frames).
    good: Vec<u64>,
    /// How many of those frames the index listed.
    indexed: u64,
    data_len: u64,
    index_len: u64,
    exists: bool,
}

/// Checks the `lzmaf` channel whose data file is `path`.
pub(crate) fn check(
    path: &Path,
    sample_bytes: usize,
    depth: Depth,
    problems: &mut Vec<Problem>,
    on_frames: OnFrames,
) -> Result<Checked<LzmafPlan>> {
    let index = index_path(path);
    let data_len = file_len(path)?;
    let index_len = file_len(&index)?;
    if data_len.is_none() {
        problems.push(Problem::FileMissing);
    }
    if index_len.is_none() {
        problems.push(Problem::IndexMissing);
    }
    let exists = data_len.is_some();
    let (data_len, index_len) = (data_len.unwrap_or(0), index_len.unwrap_or(0));
    // Read once: a file growing meanwhile must not make the length and the bytes disagree.
    let index_bytes = read_index_bytes(&index)?;
    let index_len = index_len.min(index_bytes.len() as u64);
    let mut good = trusted_prefix(
        &index_bytes[..index_len as usize],
        data_len,
        exists,
        problems,
    );
    // The data mapped, its pages released behind the frames decoded in order: `--deep`
    // over an hour's channel holds no more of it than over a second's.
    // SAFETY: as for the reader: a channel's files are append-only while it is checked;
    // `recover` cuts them only after this map is gone.
    let map = || -> Result<Option<memmap2::Mmap>> {
        Ok(unsafe { crate::io::map_possibly_empty(path) }?.0)
    };
    let mut data = None;
    if depth == Depth::Deep && good.len() > 1 {
        let m = map()?;
        let bytes = m.as_deref().unwrap_or_default();
        let behind = crate::mem::ReleaseBehind::default();
        let total = good.len() as u64 - 1;
        // Every frame decoded, on every core; the first that fails ends the channel. Pages
        // well behind the frames done are released (frames are handed out in order, a chunk
        // at a time: a page dropped while a slow chunk still reads it is faulted in again).
        let mut calls = 0u64;
        let frame = |k: u64| &bytes[good[k as usize] as usize..good[k as usize + 1] as usize];
        let bad = crate::format::deep::check_frames(
            total,
            true,
            |k| frame(k).len() as u64,
            |k| match lzma::decompress(frame(k), sample_bytes, path) {
                Ok(v) if v.len() == sample_bytes => None,
                Ok(v) => Some(Problem::FrameSize {
                    frame: k as usize,
                    got: v.len(),
                    expected: sample_bytes,
                }),
                Err(source) => Some(Problem::FrameUndecodable {
                    frame: k as usize,
                    source,
                }),
            },
            &mut |done, b| {
                on_frames(done, total, b);
                if let Some(m) = &m {
                    let behind_all = done.saturating_sub(crate::format::deep::max_in_flight());
                    behind.read(m, calls, good[behind_all as usize]);
                    calls += 1;
                }
            },
        );
        if let Some((k, p)) = bad.into_iter().next() {
            problems.push(p);
            good.truncate(k as usize + 1);
        }
        let last = good.len() - 1;
        on_frames(last as u64, total, good[last] - good[0]);
        data = Some(m);
    }
    let indexed = good.len() as u64 - 1;
    let end = *good.last().unwrap_or(&0);
    if end < data_len {
        // Frames past the index: whole ones (a crash between data and index, or a lost
        // index) are found by their xz framing and kept; the rest is a torn frame.
        let bytes = match data {
            Some(m) => m,
            None => map()?,
        };
        let bytes = bytes.as_deref().unwrap_or_default();
        let mut reindexed = 0;
        for e in scan_frames(&bytes[end as usize..], sample_bytes) {
            good.push(end + e as u64);
            reindexed += 1;
        }
        if reindexed > 0 {
            problems.push(Problem::FramesPastIndex { count: reindexed });
        }
        let torn = data_len - *good.last().unwrap_or(&0);
        if torn > 0 {
            problems.push(Problem::TornFrame { bytes: torn });
        }
    }
    Ok(Checked {
        complete: good.len() as u64 - 1,
        disk_bytes: data_len + index_len,
        plan: LzmafPlan {
            good,
            indexed,
            data_len,
            index_len,
            exists,
        },
    })
}

impl LzmafPlan {
    /// Cuts the data after frame `target` and makes the index list exactly the kept frames.
    pub(crate) fn recover(
        &self,
        path: &Path,
        complete: u64,
        target: u64,
        cuts: &mut Vec<Cut>,
    ) -> Result<()> {
        let LzmafPlan {
            good,
            indexed,
            data_len,
            index_len,
            exists,
        } = self;
        let index = index_path(path);
        let keep = &good[..=target as usize];
        let keep_data = keep[keep.len() - 1];
        if !exists {
            fs::File::create(path).at(path)?;
            cuts.push(Cut::new(path, CutAction::CreatedEmpty));
        } else if *data_len > keep_data {
            truncate_synced(path, keep_data)?;
            cuts.push(Cut::new(
                path,
                CutAction::CutFrames {
                    frames: complete - target,
                    torn: data_len - good[good.len() - 1],
                    from: *data_len,
                    to: keep_data,
                },
            ));
        }
        let want: Vec<u8> = keep.iter().flat_map(|o| o.to_le_bytes()).collect();
        let have = fs::read(&index).unwrap_or_default();
        if have.len() as u64 > want.len() as u64 && have.starts_with(&want) {
            truncate_synced(&index, want.len() as u64)?;
            cuts.push(Cut::new(
                &index,
                CutAction::CutOffsets {
                    cut: (have.len() - want.len()) as u64,
                    offsets: ((have.len() - want.len()) / 8) as u64,
                    torn: (have.len() % 8) as u64,
                    from: *index_len,
                    to: want.len() as u64,
                },
            ));
        } else if have != want {
            crate::format::meta::write_file_atomic(&index, &want)?;
            cuts.push(Cut::new(
                &index,
                CutAction::Reindexed {
                    offsets: keep.len() as u64,
                    reindexed: target.saturating_sub(*indexed),
                    was: *index_len,
                },
            ));
        }
        Ok(())
    }
}
