//! One type over every channel format, for readers and for writers.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::avi::{repair::header_params, MjpgReader, MjpgWriter};
use super::blob::{BlobReader, BlobWriter};
use super::bounds;
use super::lzma::LzmaReader;
use super::lzmaf::{self, LzmafReader, LzmafWriter};
use super::meta::{ChannelFormat, ChannelMeta, TS_CHANNEL};
use super::raw::{RawReader, RawWriter};
use crate::error::{Error, Result};

/// The path of a channel's file (or directory, for blob formats) inside a sensor directory.
pub fn channel_path(sensor_dir: &Path, name: &str) -> PathBuf {
    sensor_dir.join(name)
}

/// Every file a channel occupies (data, `lzmaf` index), for sizes and recovery.
pub fn channel_files(sensor_dir: &Path, name: &str, meta: &ChannelMeta) -> Vec<PathBuf> {
    let data = channel_path(sensor_dir, name);
    match meta.format {
        ChannelFormat::Lzmaf => vec![lzmaf::index_path(&data), data],
        _ => vec![data],
    }
}

/// A readable channel of any supported format.
pub enum ChannelReader {
    Raw(RawReader),
    Lzma(LzmaReader),
    Lzmaf(LzmafReader),
    Blob(BlobReader),
    Mjpg(MjpgReader),
}

impl ChannelReader {
    /// Opens channel `name` of the sensor in `sensor_dir`, read against the sensor's `ts`
    /// (see [`bounds`]): its length is what `ts` and its intact samples agree on, and a
    /// sample `ts` counts that the channel cannot give is a [`Error::DamagedSample`].
    pub fn open(sensor_dir: &Path, name: &str, meta: &ChannelMeta) -> Result<ChannelReader> {
        let path = channel_path(sensor_dir, name);
        let s = meta.sample_bytes();
        // Counted before the channel's files are opened: `ts` trails the data.
        let ts = match name {
            TS_CHANNEL => None,
            _ => bounds::ts_count(sensor_dir),
        };
        Ok(match &meta.format {
            ChannelFormat::Raw => ChannelReader::Raw(RawReader::open(&path, s)?.expecting(ts)),
            ChannelFormat::Lzma => ChannelReader::Lzma(LzmaReader::open(&path, s)?.expecting(ts)),
            ChannelFormat::Lzmaf => {
                ChannelReader::Lzmaf(LzmafReader::open(&path, s)?.expecting(ts))
            }
            // The sensor's count (`ts`) says which file ends the channel: two `stat`s
            // instead of listing an hour of files (see `BlobReader::open_expecting`).
            ChannelFormat::Blob(ext) => {
                ChannelReader::Blob(BlobReader::open_expecting(&path, ext, ts)?)
            }
            ChannelFormat::Mjpg => ChannelReader::Mjpg(MjpgReader::open(&path)?.expecting(ts)),
            ChannelFormat::Other(f) => {
                return Err(Error::UnsupportedFormat {
                    channel: name.to_string(),
                    format: f.clone(),
                })
            }
        })
    }

    /// Number of samples: what the sensor's `ts` and the channel's intact data agree on
    /// (see [`bounds`]). (`lzma` channels are decompressed to count them.)
    #[allow(clippy::len_without_is_empty)] // reading the length may need I/O; no cheap is_empty
    pub fn len(&mut self) -> Result<u64> {
        Ok(match self {
            ChannelReader::Raw(r) => r.len(),
            ChannelReader::Lzma(r) => r.len()?,
            ChannelReader::Lzmaf(r) => r.len(),
            ChannelReader::Blob(r) => r.len(),
            ChannelReader::Mjpg(r) => r.len(),
        })
    }

    /// Whether the channel holds no sample.
    pub fn is_empty(&mut self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Sample `index`: borrowed for `raw`, decoded otherwise.
    pub fn get(&mut self, index: u64) -> Result<Cow<'_, [u8]>> {
        Ok(match self {
            ChannelReader::Raw(r) => Cow::Borrowed(r.get(index)?),
            ChannelReader::Lzmaf(r) => Cow::Owned(r.get(index)?),
            ChannelReader::Blob(r) => Cow::Owned(r.get(index)?),
            ChannelReader::Mjpg(r) => Cow::Borrowed(r.frame(index)?),
            ChannelReader::Lzma(r) => Cow::Borrowed(r.sample(index)?),
        })
    }

    /// Sample `index` through a shared reference, so that threads can read one open channel
    /// together: every format but whole-file `lzma`, whose samples need the file decoded
    /// first (`get`, with `&mut`), gives `Some`.
    pub fn get_shared(&self, index: u64) -> Option<Result<Cow<'_, [u8]>>> {
        Some(match self {
            ChannelReader::Raw(r) => r.get(index).map(Cow::Borrowed),
            ChannelReader::Lzmaf(r) => r.get(index).map(Cow::Owned),
            ChannelReader::Blob(r) => r.get(index).map(Cow::Owned),
            ChannelReader::Mjpg(r) => r.frame(index).map(Cow::Borrowed),
            ChannelReader::Lzma(_) => return None,
        })
    }

    /// Streams samples `range` through `f` in order, one at a time (constant memory: `lzma`
    /// channels are decoded as a stream instead of whole).
    pub fn visit(
        &mut self,
        range: Range<u64>,
        mut f: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        if let ChannelReader::Lzma(r) = self {
            if r.whole.is_none() {
                let mut stream = r.stream()?.skip(range.start as usize);
                for i in range.clone() {
                    match stream.next() {
                        Some(Ok(sample)) => f(i, &sample)?,
                        Some(Err(e)) => return Err(r.stream_error(i, Some(e))),
                        None => return Err(r.stream_error(i, None)),
                    }
                }
                return Ok(());
            }
        }
        for i in range {
            f(i, &self.get(i)?)?;
        }
        Ok(())
    }

    /// Samples `range` as separate sample buffers (works for every format).
    pub fn get_range(&mut self, range: Range<u64>) -> Result<Vec<Vec<u8>>> {
        range.map(|i| self.get(i).map(Cow::into_owned)).collect()
    }
}

/// An appendable channel.
pub enum ChannelWriter {
    Raw(RawWriter),
    Lzmaf(LzmafWriter),
    Blob(BlobWriter),
    Mjpg(MjpgWriter),
}

/// Options for channel writers.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// User-space buffer per channel file.
    pub buffer_bytes: usize,
    /// `.xz` preset for `lzmaf` channels (upstream uses 0).
    pub lzmaf_preset: u32,
    /// Write `raw` channels whose samples have at least this many bytes with `O_DIRECT`
    /// (see [`super::direct`]); `None`: never.
    pub direct_io_min_sample_bytes: Option<usize>,
    /// Start the kernel's writeback of a channel file every this many bytes (see
    /// [`super::append`]); 0: leave it to the kernel.
    pub writeback_bytes: u64,
    /// fsyncs of a blob channel's files in flight at once (see
    /// [`BlobWriter::set_sync_threads`]).
    pub blob_sync_threads: usize,
    /// Most files of a blob channel open between syncs (see [`BlobWriter::set_max_open`]).
    pub blob_max_open: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            buffer_bytes: super::append::DEFAULT_BUFFER_BYTES,
            lzmaf_preset: super::lzma::DEFAULT_PRESET,
            direct_io_min_sample_bytes: None,
            writeback_bytes: super::append::DEFAULT_WRITEBACK_BYTES,
            blob_sync_threads: super::blob::DEFAULT_SYNC_THREADS,
            blob_max_open: super::blob::DEFAULT_MAX_OPEN,
        }
    }
}

impl ChannelWriter {
    /// Creates a new channel, or opens an existing one to append when `append` is set.
    pub fn open(
        sensor_dir: &Path,
        name: &str,
        meta: &ChannelMeta,
        opts: &WriterOptions,
        append: bool,
    ) -> Result<ChannelWriter> {
        let path = channel_path(sensor_dir, name);
        let s = meta.sample_bytes();
        let (b, p) = (opts.buffer_bytes, opts.lzmaf_preset);
        let direct = opts.direct_io_min_sample_bytes.is_some_and(|min| s >= min);
        let mut w = match (&meta.format, append) {
            (ChannelFormat::Raw, a) if direct => {
                ChannelWriter::Raw(RawWriter::open_direct(&path, s, b, a)?)
            }
            (ChannelFormat::Raw, false) => ChannelWriter::Raw(RawWriter::create(&path, s, b)?),
            (ChannelFormat::Raw, true) => ChannelWriter::Raw(RawWriter::open_append(&path, s, b)?),
            (ChannelFormat::Lzmaf, false) => {
                ChannelWriter::Lzmaf(LzmafWriter::create(&path, s, p, b)?)
            }
            (ChannelFormat::Lzmaf, true) => {
                ChannelWriter::Lzmaf(LzmafWriter::open_append(&path, s, p, b)?)
            }
            (ChannelFormat::Blob(ext), false) => {
                ChannelWriter::Blob(BlobWriter::create(&path, ext)?)
            }
            (ChannelFormat::Blob(ext), true) => {
                ChannelWriter::Blob(BlobWriter::open_append(&path, ext)?)
            }
            (ChannelFormat::Mjpg, false) => {
                let (w, h, fps) = header_params(meta);
                ChannelWriter::Mjpg(MjpgWriter::create(&path, w, h, fps, b)?)
            }
            (ChannelFormat::Mjpg, true) if path.exists() => {
                ChannelWriter::Mjpg(MjpgWriter::open_append(&path, b)?)
            }
            (ChannelFormat::Mjpg, true) => {
                let (w, h, fps) = header_params(meta);
                ChannelWriter::Mjpg(MjpgWriter::create(&path, w, h, fps, b)?)
            }
            (f, _) => {
                return Err(Error::UnsupportedFormat {
                    channel: name.to_string(),
                    format: format!("{} (not writable)", f.as_str()),
                })
            }
        };
        match &mut w {
            ChannelWriter::Raw(r) => r.file_mut().set_writeback_bytes(opts.writeback_bytes),
            ChannelWriter::Lzmaf(l) => l.data_mut().set_writeback_bytes(opts.writeback_bytes),
            ChannelWriter::Mjpg(m) => m.file_mut().set_writeback_bytes(opts.writeback_bytes),
            // One small file per sample, a period's fsynced together, a bounded number open.
            ChannelWriter::Blob(b) => {
                b.set_sync_threads(opts.blob_sync_threads);
                b.set_max_open(opts.blob_max_open);
            }
        }
        Ok(w)
    }

    /// Appends one sample (decoded bytes; `lzmaf` compresses it here).
    pub fn append(&mut self, sample: &[u8]) -> Result<()> {
        match self {
            ChannelWriter::Raw(w) => w.append(sample),
            ChannelWriter::Lzmaf(w) => w.append(sample),
            ChannelWriter::Blob(w) => w.append(sample),
            ChannelWriter::Mjpg(w) => w.append(sample),
        }
    }

    /// Appends one sample in its stored encoding: for `lzmaf` an `.xz` frame from
    /// [`super::lzma::compress`], for the others the same as [`ChannelWriter::append`].
    pub fn append_encoded(&mut self, encoded: &[u8]) -> Result<()> {
        match self {
            ChannelWriter::Lzmaf(w) => w.append_compressed(encoded),
            other => other.append(encoded),
        }
    }

    /// Samples written.
    pub fn len(&self) -> u64 {
        match self {
            ChannelWriter::Raw(w) => w.len(),
            ChannelWriter::Lzmaf(w) => w.len(),
            ChannelWriter::Blob(w) => w.len(),
            ChannelWriter::Mjpg(w) => w.len(),
        }
    }

    /// Whether no sample was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether appending `n` more bytes may hand buffered bytes to the kernel (see
    /// [`super::append::AppendFile::append_reaches_kernel`]); blob samples always reach it.
    pub fn append_reaches_kernel(&self, n: usize) -> bool {
        match self {
            ChannelWriter::Raw(w) => w.file().append_reaches_kernel(n),
            ChannelWriter::Lzmaf(w) => w.data().append_reaches_kernel(n),
            ChannelWriter::Blob(_) => true,
            ChannelWriter::Mjpg(w) => w.file().append_reaches_kernel(n),
        }
    }

    /// Hands buffered bytes to the kernel.
    pub fn flush(&mut self) -> Result<()> {
        match self {
            ChannelWriter::Raw(w) => w.flush(),
            ChannelWriter::Lzmaf(w) => w.flush(),
            ChannelWriter::Blob(w) => w.flush(),
            ChannelWriter::Mjpg(w) => w.flush(),
        }
    }

    /// fsyncs what was written.
    pub fn sync(&mut self) -> Result<()> {
        match self {
            ChannelWriter::Raw(w) => w.sync(),
            ChannelWriter::Lzmaf(w) => w.sync(),
            ChannelWriter::Blob(w) => w.sync(),
            ChannelWriter::Mjpg(w) => w.sync(),
        }
    }

    /// Syncs and closes.
    pub fn finish(self) -> Result<()> {
        match self {
            ChannelWriter::Raw(w) => w.finish(),
            ChannelWriter::Lzmaf(w) => w.finish(),
            ChannelWriter::Blob(w) => w.finish(),
            ChannelWriter::Mjpg(w) => w.finish(),
        }
    }
}
