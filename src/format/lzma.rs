//! The `.xz` codec (via `lzma-rust2`) and `lzma` channels: one `.xz` container (possibly
//! several concatenated streams) holding all samples.
//!
//! `lzma-rs`, named in the design card, stores data uncompressed in its `.xz` writer and
//! cannot read multi-stream files; `lzma-rust2` does both (see BENCHMARKS.md).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use lzma_rust2::{XzOptions, XzReader, XzWriter};

use crate::error::{Error, IoContext, Result};

/// The preset upstream uses for per-frame compression.
pub const DEFAULT_PRESET: u32 = 0;

/// Compresses `data` into one `.xz` container (CRC64 check, as Python's `lzma` does).
pub fn compress(data: &[u8], preset: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    let mut w = XzWriter::new(&mut out, XzOptions::with_preset(preset.min(9)))
        .expect("xz writer over a Vec");
    w.write_all(data).expect("writing to a Vec");
    w.finish().expect("finishing into a Vec");
    out
}

/// Decompresses `.xz` bytes (all streams), refusing more than `limit` decompressed bytes.
pub fn decompress(data: &[u8], limit: usize, what: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    XzReader::new(data, true)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::corrupt(what, format!("xz: {e}")))?;
    if out.len() > limit {
        return Err(Error::corrupt(
            what,
            format!("xz data decompresses to more than {limit} bytes"),
        ));
    }
    Ok(out)
}

/// An `lzma` channel: decompressed on demand, streamed or whole.
pub struct LzmaReader {
    pub(crate) path: PathBuf,
    sample_bytes: usize,
    /// Decompressed contents, filled on first random access.
    pub(crate) whole: Option<Vec<u8>>,
}

impl LzmaReader {
    /// Opens `path`; nothing is decompressed until asked for.
    pub fn open(path: &Path, sample_bytes: usize) -> Result<LzmaReader> {
        File::open(path).at(path)?;
        Ok(LzmaReader {
            path: path.to_path_buf(),
            sample_bytes,
            whole: None,
        })
    }

    /// Bytes per sample.
    pub fn sample_bytes(&self) -> usize {
        self.sample_bytes
    }

    /// Decompresses the whole channel (once) and returns its bytes.
    pub fn bytes(&mut self) -> Result<&[u8]> {
        if self.whole.is_none() {
            let mut out = Vec::new();
            let file = File::open(&self.path).at(&self.path)?;
            XzReader::new(BufReader::new(file), true)
                .read_to_end(&mut out)
                .map_err(|e| Error::corrupt(&self.path, format!("xz: {e}")))?;
            self.whole = Some(out);
        }
        Ok(self.whole.as_deref().unwrap_or_default())
    }

    /// Number of whole samples (decompresses the channel).
    #[allow(clippy::len_without_is_empty)] // reading the length may need I/O; no cheap is_empty
    pub fn len(&mut self) -> Result<u64> {
        let s = self.sample_bytes as u64;
        Ok(self.bytes()?.len() as u64 / s)
    }

    /// Whether the channel holds no whole sample (decompresses the channel).
    pub fn is_empty(&mut self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// A streaming iterator over samples, decompressing as it goes (constant memory).
    pub fn stream(&self) -> Result<LzmaStream> {
        let file = File::open(&self.path).at(&self.path)?;
        Ok(LzmaStream {
            path: self.path.clone(),
            inner: XzReader::new(BufReader::new(file), true),
            sample_bytes: self.sample_bytes,
            done: false,
        })
    }
}

/// Samples of an `lzma` channel in order.
pub struct LzmaStream {
    path: PathBuf,
    inner: XzReader<BufReader<File>>,
    sample_bytes: usize,
    done: bool,
}

impl Iterator for LzmaStream {
    type Item = Result<Vec<u8>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut buf = vec![0u8; self.sample_bytes];
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::corrupt(&self.path, format!("xz: {e}"))));
                }
            }
        }
        if filled < buf.len() {
            self.done = true;
            return (filled > 0).then(|| {
                Err(Error::corrupt(
                    &self.path,
                    format!("ends with a partial sample of {filled} bytes"),
                ))
            });
        }
        Some(Ok(buf))
    }
}
