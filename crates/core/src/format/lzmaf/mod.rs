//! `lzmaf` channels: every sample its own `.xz` container, concatenated in the channel file,
//! plus `<name>_i`, little-endian `u64` offsets (first 0, then each frame's end).
//!
//! Write order is data before index, both when buffering and when syncing, so after a crash the
//! index never points past data that reached the disk (unless the disk reorders a power cut;
//! validation checks that too). `check` is what `validate` and `recover` do to a channel.

pub(crate) mod check;
pub mod compact;

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::append::AppendFile;
use super::bounds::{self, Expected};
use super::lzma;
use super::problem::Problem;
use crate::error::{CorruptProblem, Damage, Error, Result, XzProblem};

/// The index file's path for the channel file `data`.
pub fn index_path(data: &Path) -> PathBuf {
    let mut name = data.file_name().unwrap_or_default().to_os_string();
    name.push("_i");
    data.with_file_name(name)
}

/// Appends compressed frames to an `lzmaf` channel.
pub struct LzmafWriter {
    data: AppendFile,
    index: AppendFile,
    sample_bytes: usize,
    preset: u32,
    len: u64,
}

impl LzmafWriter {
    /// Creates the channel file and its index (holding the leading 0).
    pub fn create(
        path: &Path,
        sample_bytes: usize,
        preset: u32,
        buffer_bytes: usize,
    ) -> Result<LzmafWriter> {
        let data = AppendFile::create_new(path, buffer_bytes)?;
        let mut index = AppendFile::create_new(&index_path(path), 4096)?;
        index.append(&0u64.to_le_bytes())?;
        Ok(LzmafWriter {
            data,
            index,
            sample_bytes,
            preset,
            len: 0,
        })
    }

    /// Opens an existing channel to append. Data and index must agree exactly (run recovery
    /// first after a crash).
    pub fn open_append(
        path: &Path,
        sample_bytes: usize,
        preset: u32,
        buffer_bytes: usize,
    ) -> Result<LzmafWriter> {
        let offsets = read_index(&index_path(path))?;
        let data = AppendFile::open_append(path, buffer_bytes)?;
        let mut index = AppendFile::open_append(&index_path(path), 4096)?;
        if offsets.is_empty() {
            if !data.is_empty() {
                return Err(Error::corrupt(path, CorruptProblem::DataWithoutIndex));
            }
            index.append(&0u64.to_le_bytes())?;
        } else if offsets.last() != Some(&data.len()) {
            return Err(Error::corrupt(
                path,
                CorruptProblem::IndexDataMismatch {
                    index_end: *offsets.last().unwrap_or(&0),
                    data_len: data.len(),
                },
            ));
        }
        Ok(LzmafWriter {
            data,
            index,
            sample_bytes,
            preset,
            len: offsets.len().saturating_sub(1) as u64,
        })
    }

    /// Compresses and appends one sample.
    pub fn append(&mut self, sample: &[u8]) -> Result<()> {
        if sample.len() != self.sample_bytes {
            return Err(Error::SampleSize {
                channel: self.data.path().display().to_string(),
                expected: self.sample_bytes,
                got: sample.len(),
            });
        }
        let frame = lzma::compress(sample, self.preset);
        self.append_compressed(&frame)
    }

    /// Appends a frame already compressed with [`lzma::compress`] (the daemon compresses on
    /// worker threads, off the ingest path).
    pub fn append_compressed(&mut self, frame: &[u8]) -> Result<()> {
        self.data.append(frame)?;
        // The index's buffer is smaller than the data's: when it spills, the frames its
        // entries point at go to the kernel first.
        if self.index.append_reaches_kernel(8) {
            self.data.flush()?;
        }
        self.index.append(&self.data.len().to_le_bytes())?;
        self.len += 1;
        Ok(())
    }

    /// Samples written, buffered ones included.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no sample was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The data file underneath (not the index).
    pub fn data(&self) -> &AppendFile {
        &self.data
    }

    /// The data file underneath (not the index), for its settings.
    pub fn data_mut(&mut self) -> &mut AppendFile {
        &mut self.data
    }

    /// Data to the kernel first, then the index.
    pub fn flush(&mut self) -> Result<()> {
        self.data.flush()?;
        self.index.flush()
    }

    /// Data synced first, then the index.
    pub fn sync(&mut self) -> Result<()> {
        self.data.sync()?;
        self.index.sync()
    }

    /// Syncs and closes both files.
    pub fn finish(self) -> Result<()> {
        self.data.finish()?;
        self.index.finish()
    }
}

/// Reads an index file as offsets; a missing file reads as empty. A torn trailing partial
/// entry is ignored here (validation reports it).
pub fn read_index(path: &Path) -> Result<Vec<u64>> {
    Ok(parse_index(&read_index_bytes(path)?))
}

/// An index file's bytes; a missing file reads as empty.
pub fn read_index_bytes(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Index bytes as offsets; a torn trailing partial entry is ignored.
pub fn parse_index(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// The offsets of an index (its file's bytes) that can be trusted against a data file of
/// `data_len` bytes: the prefix that starts at 0, never decreases and stays within the data.
/// Always starts with 0. What is wrong with the rest is pushed to `problems`;
/// `data_exists` says whether a missing leading 0 is a problem (an empty, missing channel
/// has none).
///
/// Pure over bytes, so recovery's trust decision can be fuzzed without files.
pub fn trusted_prefix(
    index: &[u8],
    data_len: u64,
    data_exists: bool,
    problems: &mut Vec<Problem>,
) -> Vec<u64> {
    if !index.len().is_multiple_of(8) {
        problems.push(Problem::IndexTornEntry {
            bytes: index.len() % 8,
        });
    }
    let mut entries = index
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
    let mut good = vec![0u64];
    match entries.next() {
        None if data_exists => problems.push(Problem::IndexNoLeadingZero),
        None => {}
        Some(first) if first != 0 => problems.push(Problem::IndexFirstOffset { first }),
        Some(_) => {
            let listed = index.len() / 8 - 1;
            for o in entries {
                if o < *good.last().unwrap_or(&0) || o > data_len {
                    break;
                }
                good.push(o);
            }
            if good.len() - 1 < listed {
                problems.push(Problem::IndexOutOfOrder {
                    listed,
                    within: good.len() - 1,
                    data_len,
                });
            }
        }
    }
    good
}

/// What a reader can trust of `offsets` (an index, at least its leading entry) against a
/// data file of `data_len` bytes: (frames whose entries run from 0 in order and end within
/// the data, frames before the first entry out of order). The first count is the frames
/// [`trusted_prefix`] keeps of the same index (the fuzz target `lzmaf_index` checks it).
pub fn intact_frames(offsets: &[u64], data_len: u64) -> (u64, u64) {
    let frames = offsets.len().saturating_sub(1);
    let ordered = match offsets.first() {
        Some(0) => offsets
            .windows(2)
            .position(|w| w[1] < w[0])
            .unwrap_or(frames),
        _ => 0,
    };
    let within = offsets
        .iter()
        .skip(1)
        .position(|&end| end > data_len)
        .unwrap_or(frames);
    (ordered.min(within) as u64, ordered as u64)
}

/// What a reader takes of an index (its file's bytes) against a data file of `data_len`
/// bytes, deciding in O(1) when it can: (frames counted, frames before the first entry known
/// to be out of order). When the index starts at 0 and its last whole entry lies within the
/// data (every crash leaves it so: entries reach the disk after their frames), every frame
/// it lists is counted and each read checks its own two entries ([`LzmafReader::compressed`]);
/// an index that ends past its data (a data file cut short, a power cut that reordered the
/// writes) or does not start at 0 is walked whole: [`intact_frames`].
pub fn reader_frames(index: &[u8], data_len: u64) -> (u64, u64) {
    let listed = (index.len() / 8).saturating_sub(1);
    if listed == 0 {
        return (0, 0);
    }
    if counts_every_frame(entry_at(index, 0), entry_at(index, listed), data_len) {
        (listed as u64, listed as u64)
    } else {
        intact_frames(&parse_index(index), data_len)
    }
}

/// The O(1) rule of [`reader_frames`]: the index's first entry is 0 and its last whole one
/// lies within the data.
fn counts_every_frame(first: Option<u64>, last: Option<u64>, data_len: u64) -> bool {
    first == Some(0) && last.is_some_and(|end| end <= data_len)
}

/// Entry `k` of index bytes.
fn entry_at(index: &[u8], k: usize) -> Option<u64> {
    let b = index.get(k.checked_mul(8)?..k.checked_mul(8)?.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// What a reader keeps of the `_i` file.
enum Index {
    /// Every frame counted ([`reader_frames`]): the file, each read takes its two entries.
    File(std::fs::File),
    /// Walked whole at open (an index ending past its data, or not starting at 0).
    Entries(Vec<u64>),
}

impl Index {
    /// Entries `k` and `k + 1` (`None` past the index).
    fn pair(&self, k: u64) -> std::io::Result<Option<(u64, u64)>> {
        match self {
            Index::Entries(v) => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                Ok(v.get(k)
                    .zip(v.get(k.saturating_add(1)))
                    .map(|(a, b)| (*a, *b)))
            }
            Index::File(f) => {
                use std::os::unix::fs::FileExt;
                let mut b = [0u8; 16];
                match f.read_exact_at(&mut b, k.saturating_mul(8)) {
                    Ok(()) => Ok(entry_at(&b, 0).zip(entry_at(&b, 1))),
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// Decides what a reader counts of the index `f` (at `path`, `len` bytes when measured)
/// against `data_len` bytes of data: [`reader_frames`]'s rule, reading its first and last
/// entries, or all of it when that rule does not hold. Returns (the index, frames listed,
/// counted, ordered).
fn open_index(
    f: std::fs::File,
    len: u64,
    path: &Path,
    data_len: u64,
) -> Result<(Index, u64, u64, u64)> {
    use std::os::unix::fs::FileExt;
    let listed = (len / 8).saturating_sub(1);
    let entry = |k: u64| -> Result<u64> {
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, k * 8)
            .map_err(|e| Error::io(path, e))?;
        Ok(u64::from_le_bytes(b))
    };
    if listed > 0 && counts_every_frame(Some(entry(0)?), Some(entry(listed)?), data_len) {
        return Ok((Index::File(f), listed, listed, listed));
    }
    // The whole listed part, as it was measured (a live index may have grown since).
    let mut bytes = vec![0u8; (len / 8 * 8) as usize];
    f.read_exact_at(&mut bytes, 0)
        .map_err(|e| Error::io(path, e))?;
    let entries = parse_index(&bytes);
    let (intact, ordered) = intact_frames(&entries, data_len);
    Ok((Index::Entries(entries), listed, intact, ordered))
}

/// A random-access `lzmaf` channel (data mapped; the index read as reads need it).
///
/// Frames are read as far as the index can be trusted (see [`reader_frames`]): from 0,
/// never going back, within the data file (upstream reads frame `k` from `[off[k], off[k+1])`
/// the same way). A frame the index or `ts` lists past that (a data file cut short, an index
/// entry out of order) or one that does not decode is a [`Error::DamagedSample`]; the frames
/// before it read as ever. Opening costs the same for an hour as for a second when the index
/// ends within its data: only its first and last entries are read then.
pub struct LzmafReader {
    path: PathBuf,
    map: Option<Mmap>,
    /// The `_i` file, or its entries.
    index: Index,
    /// Frames the index lists (its whole entries, less the leading 0).
    listed: u64,
    sample_bytes: usize,
    /// Bytes of the data file when mapped.
    data_len: u64,
    /// Frames counted: see [`reader_frames`].
    intact: u64,
    /// Frames before the first index entry known to be out of order.
    ordered: u64,
    expected: Expected,
    /// Pages behind a read in order are released (see [`crate::mem::ReleaseBehind`]).
    behind: crate::mem::ReleaseBehind,
}

impl LzmafReader {
    /// Opens the channel: the index's length taken, then the data mapped (in that order: the
    /// index trails the data, so a channel being recorded is never taken for a damaged one),
    /// then what the index lets a reader count (see [`reader_frames`]).
    pub fn open(path: &Path, sample_bytes: usize) -> Result<LzmafReader> {
        let ipath = index_path(path);
        let index_file = match std::fs::File::open(&ipath) {
            Ok(f) => {
                let len = f.metadata().map_err(|e| Error::io(&ipath, e))?.len();
                Some((f, len))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(&ipath, e)),
        };
        // SAFETY: as for raw channels, lzmaf files are append-only while readable.
        let (map, data_len) = unsafe { crate::io::map_possibly_empty(path) }?;
        let (index, listed, intact, ordered) = match index_file {
            Some((f, len)) => open_index(f, len, &ipath, data_len)?,
            None => (Index::Entries(Vec::new()), 0, 0, 0),
        };
        Ok(LzmafReader {
            path: path.to_path_buf(),
            map,
            index,
            listed,
            sample_bytes,
            data_len,
            intact,
            ordered,
            expected: None,
            behind: Default::default(),
        })
    }

    /// Reads the channel against the sensor's `ts` count (see [`Expected`]).
    pub fn expecting(mut self, expected: Expected) -> LzmafReader {
        self.expected = expected;
        self
    }

    /// Number of frames: the intact ones, no more than `ts` counts.
    pub fn len(&self) -> u64 {
        bounds::agreed(self.intact, self.expected)
    }

    /// Whether there is no frame.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frames the index lists (intact or not).
    pub fn listed(&self) -> u64 {
        self.listed
    }

    /// Frame `index`'s compressed bytes, borrowed from the map. Every intact frame can be
    /// read, also one past `ts` (data a crash left without its timestamp).
    pub fn compressed(&self, index: u64) -> Result<&[u8]> {
        if index >= self.intact {
            return Err(bounds::unreadable(
                &self.path,
                index,
                self.len(),
                self.listed(),
                self.expected,
                || self.damage(index),
            ));
        }
        let pair = self
            .index
            .pair(index)
            .map_err(|e| Error::io(index_path(&self.path), e))?;
        // Below `intact`, so within the index as measured at open (which only grows).
        let (a, b) = pair.unwrap_or((u64::MAX, 0));
        if a > b || b > self.data_len {
            // Counted without walking the index (see `reader_frames`): its own entries are
            // checked here. Out of order (an entry past the data is followed by a smaller one,
            // as the last is within it).
            return Err(Error::DamagedSample {
                path: self.path.clone(),
                index,
                damage: Damage::BadIndex { start: a, end: b },
            });
        }
        Ok(match &self.map {
            Some(m) => {
                self.behind.read(m, index, a);
                &m[a as usize..b as usize]
            }
            None => &[],
        })
    }

    /// Why frame `index`, past the intact ones, cannot be read.
    fn damage(&self, index: u64) -> Damage {
        if index >= self.listed() {
            return Damage::NotIndexed {
                frames: self.listed(),
            };
        }
        // Below `listed` but not `intact`: only an index walked whole at open has such frames.
        let (start, end) = self.index.pair(index).ok().flatten().unwrap_or_default();
        if index >= self.ordered {
            Damage::BadIndex { start, end }
        } else if start < self.data_len {
            Damage::Cut {
                have: self.data_len - start,
                need: end - start,
            }
        } else {
            Damage::PastData {
                end,
                data_len: self.data_len,
            }
        }
    }

    /// Sample `index`, decompressed.
    pub fn get(&self, index: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.get_into(index, &mut out)?;
        Ok(out)
    }

    /// Sample `index`, decompressed into `out` (replacing what it held; its allocation is
    /// reused, so a loop over frames allocates once).
    pub fn get_into(&self, index: u64, out: &mut Vec<u8>) -> Result<()> {
        let frame = self.compressed(index)?;
        let damaged = |why| Error::DamagedSample {
            path: self.path.clone(),
            index,
            damage: Damage::Undecodable(why),
        };
        lzma::decode_into(frame, self.sample_bytes, out).map_err(damaged)?;
        if out.len() != self.sample_bytes {
            return Err(damaged(XzProblem::DecodedSize {
                got: out.len(),
                expected: self.sample_bytes,
            }));
        }
        Ok(())
    }
}

/// The `.xz` stream header magic.
const XZ_MAGIC: [u8; 6] = [0xFD, b'7', b'z', b'X', b'Z', 0x00];
/// The `.xz` stream footer magic (the last two bytes of a stream).
const XZ_FOOTER_MAGIC: [u8; 2] = [b'Y', b'Z'];

/// Finds whole frames at the start of `data` by their `.xz` framing, for re-indexing frames
/// whose index entries were lost: a frame starts with the stream magic and ends with the footer
/// magic; each candidate end is only accepted if the bytes up to it decompress (checksum
/// included) to exactly `sample_bytes`. Returns the frames' end
/// offsets; stops at the first byte that is not the start of a whole frame.
pub fn scan_frames(data: &[u8], sample_bytes: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut pos = 0;
    // Smallest possible .xz stream: 12-byte header, 12-byte footer, an index.
    const MIN_STREAM: usize = 32;
    while data[pos..].starts_with(&XZ_MAGIC) {
        let found = (pos + MIN_STREAM..=data.len()).find(|&q| {
            // What follows is not looked at: after the last whole frame it may be anything
            // (the first bytes of a torn frame, bytes a power cut zeroed).
            data[q - 2..q] == XZ_FOOTER_MAGIC
                && lzma::decompress(&data[pos..q], sample_bytes, Path::new(""))
                    .is_ok_and(|v| v.len() == sample_bytes)
        });
        match found {
            Some(q) => {
                ends.push(q);
                pos = q;
            }
            None => break,
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index's small buffer fills long before the data's: its entries must not reach the
    /// kernel before the frames they point at, or a reader of the live channel (and a crash)
    /// finds an index pointing past the data.
    #[test]
    fn index_never_reaches_the_kernel_before_its_frames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rng");
        let mut w = LzmafWriter::create(&path, 16, lzma::DEFAULT_PRESET, 1 << 20).unwrap();
        for i in 0..2000u32 {
            w.append(&[i as u8; 16]).unwrap();
            let index = read_index(&index_path(&path)).unwrap();
            let data = std::fs::metadata(&path).unwrap().len();
            let last = *index.last().unwrap_or(&0);
            assert!(
                last <= data,
                "after sample {i}: the index points at {last} but the data file is {data} bytes"
            );
        }
        let r = LzmafReader::open(&path, 16).unwrap();
        assert!(r.len() <= 2000);
        w.finish().unwrap();
        assert_eq!(LzmafReader::open(&path, 16).unwrap().len(), 2000);
    }

    /// Re-finding frames whose offsets were lost: the last whole frame is kept whatever
    /// follows it (the first bytes of a torn frame, bytes a power cut zeroed).
    #[test]
    fn scan_keeps_the_last_whole_frame_before_any_torn_tail() {
        let frames: Vec<Vec<u8>> = (0..3u8).map(|i| lzma::compress(&[i; 40], 0)).collect();
        let whole = frames.concat();
        let ends: Vec<usize> = frames
            .iter()
            .scan(0, |end, f| {
                *end += f.len();
                Some(*end)
            })
            .collect();
        for tail in [
            &frames[0][..3],
            &frames[0][..5],
            &[0u8; 64][..],
            &[0u8; 1][..],
        ] {
            let mut data = whole.clone();
            data.extend_from_slice(tail);
            assert_eq!(scan_frames(&data, 40), ends, "tail {tail:?}");
        }
        assert_eq!(scan_frames(&whole, 40), ends);
    }
}
