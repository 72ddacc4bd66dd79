//! `roverlog compact`: recompresses the `lzmaf` frames the daemon stored uncompressed when
//! compression fell behind (`format::stored_xz`), once the vehicle is parked.
//!
//! A channel's data and index must change together, which two renames cannot do. So the
//! sensor is staged whole in `<trace>/_roverlog/compact/<sensor>/` (every file it does not
//! rewrite hard-linked, the rewritten channels written and fsynced there), and the staged
//! directory is exchanged with the sensor's in one atomic `renameat2(RENAME_EXCHANGE)`; the
//! old files, now in the staging place, are removed last. At any crash the sensor directory is
//! either the old one or the new one, both whole; what is left under `_roverlog/compact/` is
//! never a sensor (upstream looks for `meta.json` one level down only) and the next run
//! removes it. Every recompressed frame is decoded again and compared before it is kept.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{index_path, LzmafReader, LzmafWriter};
use crate::error::{CorruptProblem, Error, IoContext, Result};
use crate::format::events::EVENTS_DIR;
use crate::format::meta::{sync_dir, ChannelFormat, SensorMeta};
use crate::format::{lzma, stored_xz};

/// One `lzmaf` channel's frames: how many, how many stored uncompressed, bytes on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelFrames {
    pub channel: String,
    pub frames: u64,
    pub stored: u64,
    pub bytes: u64,
}

/// What compacting one channel did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub channel: String,
    pub frames: u64,
    /// Frames that were stored uncompressed and are now compressed.
    pub recompressed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Where `compact` stages the sensor `sensor` of `trace`.
pub fn staging_dir(trace: &Path, sensor: &str) -> PathBuf {
    trace.join(EVENTS_DIR).join("compact").join(sensor)
}

/// The `lzmaf` channels of the sensor in `dir` and their stored-uncompressed frames.
pub fn stored_frames(dir: &Path) -> Result<Vec<ChannelFrames>> {
    let meta = SensorMeta::read(dir)?;
    let mut out = Vec::new();
    for (name, c) in meta.data_channels() {
        if c.format != ChannelFormat::Lzmaf {
            continue;
        }
        let path = dir.join(name);
        let r = LzmafReader::open(&path, c.sample_bytes())?;
        let mut stored = 0;
        for k in 0..r.len() {
            stored += u64::from(stored_xz::is_stored(r.compressed(k)?));
        }
        out.push(ChannelFrames {
            channel: name.to_string(),
            frames: r.len(),
            stored,
            bytes: crate::io::file_len(&path)?.unwrap_or(0),
        });
    }
    Ok(out)
}

/// Recompresses (at `preset`, on up to `threads` threads) every stored-uncompressed frame
/// of the sensor `sensor` of `trace`, as the module says; `progress` is given the number of
/// frames done so far, over every channel with stored frames. A sensor without such frames
/// is left untouched (nothing is written).
pub fn compact_sensor(
    trace: &Path,
    sensor: &str,
    preset: u32,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<Compacted>> {
    let dir = trace.join(sensor);
    let meta = SensorMeta::read(&dir)?;
    let channels = stored_frames(&dir)?;
    let staging = staging_dir(trace, sensor);
    // A leftover of an interrupted run: a partial copy, or the old files after the
    // exchange. The sensor directory is whole either way.
    if fs::symlink_metadata(&staging).is_ok() {
        fs::remove_dir_all(&staging).at(&staging)?;
    }
    if channels.iter().all(|c| c.stored == 0) {
        return Ok(channels
            .into_iter()
            .map(|c| Compacted {
                channel: c.channel,
                frames: c.frames,
                recompressed: 0,
                bytes_before: c.bytes,
                bytes_after: c.bytes,
            })
            .collect());
    }
    crate::format::meta::create_dir_all_durable(&staging)?;
    let rewritten: Vec<PathBuf> = channels
        .iter()
        .filter(|c| c.stored > 0)
        .flat_map(|c| {
            let p = dir.join(&c.channel);
            [index_path(&p), p]
        })
        .collect();
    link_tree(&dir, &staging, &rewritten)?;
    let mut done = 0;
    let mut out = Vec::new();
    for c in &channels {
        let sample_bytes = meta
            .get(&c.channel)
            .map(|m| m.sample_bytes())
            .unwrap_or_default();
        let mut recompressed = 0;
        let mut bytes_after = c.bytes;
        if c.stored > 0 {
            let src = LzmafReader::open(&dir.join(&c.channel), sample_bytes)?;
            let dst_path = staging.join(&c.channel);
            let mut dst = LzmafWriter::create(&dst_path, sample_bytes, preset, 1 << 20)?;
            recompressed = rewrite(&src, &mut dst, sample_bytes, preset, threads, &mut |n| {
                progress(done + n)
            })?;
            done += c.frames;
            dst.finish()?;
            bytes_after = crate::io::file_len(&dst_path)?.unwrap_or(0);
        }
        out.push(Compacted {
            channel: c.channel.clone(),
            frames: c.frames,
            recompressed,
            bytes_before: c.bytes,
            bytes_after,
        });
    }
    sync_dir(&staging)?;
    exchange(&staging, &dir)?;
    sync_dir(trace)?;
    sync_dir(crate::format::meta::parent_dir(&staging))?;
    // The old files: whatever happens from here, the sensor is its new self.
    fs::remove_dir_all(&staging).at(&staging)?;
    Ok(out)
}

/// Copies `src`'s frames into `dst`, recompressing the stored ones (groups of frames in
/// parallel); returns how many were recompressed.
fn rewrite(
    src: &LzmafReader,
    dst: &mut LzmafWriter,
    sample_bytes: usize,
    preset: u32,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let threads = threads.max(1);
    let mut recompressed = 0;
    let mut k = 0;
    while k < src.len() {
        let group: Vec<u64> = (k..src.len().min(k + 4 * threads as u64)).collect();
        let frames = group
            .iter()
            .map(|&i| src.compressed(i))
            .collect::<Result<Vec<&[u8]>>>()?;
        let per = frames.len().div_ceil(threads);
        let results: Vec<Result<Option<Vec<u8>>>> = std::thread::scope(|s| {
            let handles: Vec<_> = frames
                .chunks(per)
                .zip(group.chunks(per))
                .map(|(part, idx)| {
                    s.spawn(move || {
                        part.iter()
                            .zip(idx)
                            .map(|(f, &i)| recompress(f, i, sample_bytes, preset, src))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("compression thread"))
                .collect()
        });
        for (f, r) in frames.iter().zip(results) {
            match r? {
                Some(new) => {
                    dst.append_compressed(&new)?;
                    recompressed += 1;
                }
                None => dst.append_compressed(f)?,
            }
        }
        k += group.len() as u64;
        progress(k);
    }
    Ok(recompressed)
}

/// Frame `index` recompressed if it is stored uncompressed (checked by decoding it again),
/// else `None` (kept as it is).
fn recompress(
    frame: &[u8],
    index: u64,
    sample_bytes: usize,
    preset: u32,
    src: &LzmafReader,
) -> Result<Option<Vec<u8>>> {
    if !stored_xz::is_stored(frame) {
        return Ok(None);
    }
    let data = src.get(index)?;
    let new = lzma::compress(&data, preset);
    let back = lzma::decompress(&new, sample_bytes, &src.path)?;
    if back != data {
        return Err(Error::corrupt(
            &src.path,
            CorruptProblem::RecompressedDiffers { frame: index },
        ));
    }
    Ok(Some(new))
}

/// Recreates the tree `src` in `dst` (which exists) with hard links, leaving out `skip`.
fn link_tree(src: &Path, dst: &Path, skip: &[PathBuf]) -> Result<()> {
    for entry in fs::read_dir(src).at(src)? {
        let entry = entry.at(src)?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        if skip.contains(&from) {
            continue;
        }
        let kind = entry.file_type().at(&from)?;
        if kind.is_dir() {
            fs::create_dir(&to).at(&to)?;
            link_tree(&from, &to, skip)?;
            sync_dir(&to)?;
        } else if kind.is_file() {
            fs::hard_link(&from, &to).at(&to)?;
        } else {
            return Err(Error::io(
                &from,
                std::io::Error::other(
                    "neither a file nor a directory: compact leaves such a sensor alone",
                ),
            ));
        }
    }
    Ok(())
}

/// Swaps the directories `a` and `b` in one atomic step (Linux `renameat2`).
fn exchange(a: &Path, b: &Path) -> Result<()> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|e| Error::io(p, e.into()));
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two valid NUL-terminated paths; no memory is shared with the kernel after.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::io(
            b,
            std::io::Error::new(
                e.kind(),
                format!(
                    "exchanging it with {} (renameat2 RENAME_EXCHANGE; the filesystem must support it): {e}",
                    a.display()
                ),
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
