//! `raw` channels: fixed-size samples back to back. Written by appending, read through
//! `memmap2` without copying.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::append::AppendFile;
use super::bounds::{self, Expected};
use super::dtype::{self, Element};
use super::problem::{Checked, Cut, CutAction, Problem};
use crate::error::{CorruptProblem, Damage, Error, Result};

/// Appends fixed-size samples to a `raw` channel file.
pub struct RawWriter {
    file: AppendFile,
    sample_bytes: usize,
}

impl RawWriter {
    /// Creates a new, empty channel file.
    pub fn create(path: &Path, sample_bytes: usize, buffer_bytes: usize) -> Result<RawWriter> {
        Ok(RawWriter {
            file: AppendFile::create_new(path, buffer_bytes)?,
            sample_bytes,
        })
    }

    /// Opens an existing channel file to append. It must hold whole samples only (run
    /// recovery first after a crash).
    pub fn open_append(path: &Path, sample_bytes: usize, buffer_bytes: usize) -> Result<RawWriter> {
        RawWriter::checked(AppendFile::open_append(path, buffer_bytes)?, sample_bytes)
    }

    /// [`RawWriter::create`] (or, with `append`, [`RawWriter::open_append`]) written with
    /// `O_DIRECT` where the filesystem allows it (see [`super::direct`]).
    pub fn open_direct(
        path: &Path,
        sample_bytes: usize,
        buffer_bytes: usize,
        append: bool,
    ) -> Result<RawWriter> {
        RawWriter::checked(
            AppendFile::open_direct(path, buffer_bytes, append)?,
            sample_bytes,
        )
    }

    fn checked(file: AppendFile, sample_bytes: usize) -> Result<RawWriter> {
        let path = file.path();
        if !file.len().is_multiple_of(sample_bytes as u64) {
            return Err(Error::corrupt(
                path,
                CorruptProblem::TornTail {
                    len: file.len(),
                    sample_bytes,
                },
            ));
        }
        Ok(RawWriter { file, sample_bytes })
    }

    /// Appends one sample, which must be exactly the channel's sample size.
    pub fn append(&mut self, sample: &[u8]) -> Result<()> {
        if sample.len() != self.sample_bytes {
            return Err(Error::SampleSize {
                channel: self.file.path().display().to_string(),
                expected: self.sample_bytes,
                got: sample.len(),
            });
        }
        self.file.append(sample)
    }

    /// Samples written, buffered ones included.
    pub fn len(&self) -> u64 {
        self.file.len() / self.sample_bytes as u64
    }

    /// Whether no sample was written.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }

    /// The file underneath.
    pub fn file(&self) -> &AppendFile {
        &self.file
    }

    /// The file underneath, for its settings.
    pub fn file_mut(&mut self) -> &mut AppendFile {
        &mut self.file
    }

    /// See [`AppendFile::flush`].
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// See [`AppendFile::sync`].
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Flushes, syncs and closes.
    pub fn finish(self) -> Result<()> {
        self.file.finish()
    }
}

/// A memory-mapped `raw` channel.
///
/// The map covers the file as it was when opened. Its length is what the sensor's `ts` and
/// the whole samples agree on (see [`RawReader::expecting`]); a sample `ts` counts past the
/// file's end (a torn partial record, a file cut short) is a [`Error::DamagedSample`].
pub struct RawReader {
    path: PathBuf,
    map: Option<Mmap>,
    sample_bytes: usize,
    /// Bytes of the file when mapped.
    size: u64,
    /// Whole samples in the file.
    whole: u64,
    expected: Expected,
    /// Pages behind a read in order are released (see [`crate::mem::ReleaseBehind`]).
    behind: crate::mem::ReleaseBehind,
}

impl RawReader {
    /// Maps `path`, whose samples are `sample_bytes` long.
    pub fn open(path: &Path, sample_bytes: usize) -> Result<RawReader> {
        assert!(
            sample_bytes > 0,
            "sample size is checked by meta validation"
        );
        // SAFETY: roverd channel files are append-only; writers never shrink or rewrite a
        // file that readers may have mapped (only `recover` truncates, on a trace that is not
        // being written).
        let (map, size) = unsafe { crate::io::map_possibly_empty(path) }?;
        Ok(RawReader {
            path: path.to_path_buf(),
            map,
            sample_bytes,
            size,
            whole: size / sample_bytes as u64,
            expected: None,
            behind: Default::default(),
        })
    }

    /// Reads the channel against the sensor's `ts` count (see [`Expected`]).
    pub fn expecting(mut self, expected: Expected) -> RawReader {
        self.expected = expected;
        self
    }

    /// Number of samples: whole samples, no more than `ts` counts.
    pub fn len(&self) -> u64 {
        bounds::agreed(self.whole, self.expected)
    }

    /// Whether the channel holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per sample.
    pub fn sample_bytes(&self) -> usize {
        self.sample_bytes
    }

    /// The [`len`](Self::len) samples' bytes, borrowed from the map.
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(m) => &m[..self.len() as usize * self.sample_bytes],
            None => &[],
        }
    }

    /// Sample `index`, borrowed.
    pub fn get(&self, index: u64) -> Result<&[u8]> {
        self.range(index..index + 1)
    }

    /// Samples `range`, back to back, borrowed. Every whole sample in the file can be read,
    /// also one past `ts` (data a crash left without its timestamp).
    pub fn range(&self, range: Range<u64>) -> Result<&[u8]> {
        if range.start > range.end {
            return Err(Error::OutOfRange {
                path: self.path.clone(),
                index: range.start,
                len: self.len(),
            });
        }
        if range.end > self.whole {
            let s = self.sample_bytes as u64;
            let first = range.start.max(self.whole);
            let listed = self.size.div_ceil(s);
            return Err(bounds::unreadable(
                &self.path,
                first,
                self.len(),
                listed,
                self.expected,
                || Damage::Cut {
                    have: self.size.saturating_sub(first * s).min(s),
                    need: s,
                },
            ));
        }
        let s = self.sample_bytes;
        if let Some(m) = &self.map {
            self.behind.read(m, range.start, range.start * s as u64);
        }
        let map = self.map.as_deref().unwrap_or_default();
        Ok(&map[range.start as usize * s..range.end as usize * s])
    }

    /// The whole channel as `T`s: borrowed when aligned, copied otherwise. Fails when `T`
    /// does not match the channel's type.
    pub fn typed<T: Element>(&self, dtype: dtype::DType) -> Result<Cow<'_, [T]>> {
        if !T::compatible(dtype) {
            return Err(Error::InvalidType {
                code: format!("{dtype} cannot be viewed as {}", std::any::type_name::<T>()),
            });
        }
        let bytes = self.bytes();
        Ok(match dtype::view::<T>(bytes) {
            Some(v) => Cow::Borrowed(v),
            None => Cow::Owned(dtype::decode_vec(bytes)),
        })
    }
}

/// What recovery must know to cut a `raw` channel.
#[derive(Debug)]
pub(crate) struct RawPlan {
    sample_bytes: u64,
    size: u64,
    exists: bool,
}

/// Checks a `raw` channel file: whole samples, and a torn partial one at the end.
pub(crate) fn check(
    path: &Path,
    sample_bytes: usize,
    problems: &mut Vec<Problem>,
) -> Result<Checked<RawPlan>> {
    let s = sample_bytes as u64;
    let size = crate::io::file_len(path)?;
    if size.is_none() {
        problems.push(Problem::FileMissing);
    }
    let exists = size.is_some();
    let size = size.unwrap_or(0);
    if size % s != 0 {
        problems.push(Problem::TornTail {
            bytes: size % s,
            sample_bytes: s,
        });
    }
    Ok(Checked {
        complete: size / s,
        disk_bytes: size,
        plan: RawPlan {
            sample_bytes: s,
            size,
            exists,
        },
    })
}

impl RawPlan {
    /// Cuts the file to `target` samples (creating it empty when missing).
    pub(crate) fn recover(&self, path: &Path, target: u64, cuts: &mut Vec<Cut>) -> Result<()> {
        let keep = target * self.sample_bytes;
        if !self.exists {
            std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
            cuts.push(Cut::new(path, CutAction::CreatedEmpty));
        } else if self.size > keep {
            crate::io::truncate_synced(path, keep)?;
            let (from, to) = (self.size, keep);
            cuts.push(Cut::new(
                path,
                CutAction::CutSamples {
                    samples: self.size / self.sample_bytes - target,
                    torn: self.size % self.sample_bytes,
                    from,
                    to,
                },
            ));
        }
        Ok(())
    }
}
