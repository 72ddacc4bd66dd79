//! An append-only file with a user-space buffer and a remembered failure.
//!
//! All channel writers sit on this. Once a write or fsync has failed, the file is not trusted
//! again: every later call returns the first error (redb's rule; after a failed fsync the
//! kernel may have dropped dirty pages, so retrying could report success for lost data).
//!
//! Large `raw` channels can be written with `O_DIRECT` instead ([`AppendFile::open_direct`],
//! [`super::direct`]): same contract, no page-cache copy.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::direct::DirectSink;
use crate::error::{Error, IoContext, Result};

/// Default user-space buffer per channel file.
pub const DEFAULT_BUFFER_BYTES: usize = 256 * 1024;

/// An append-only file.
pub struct AppendFile {
    path: PathBuf,
    out: Sink,
    /// Bytes appended, buffered ones included.
    len: u64,
    /// The first failure, if any: the file is unusable from then on.
    failed: Option<String>,
}

impl AppendFile {
    /// Creates `path`, which must not exist yet.
    pub fn create_new(path: &Path, buffer_bytes: usize) -> Result<AppendFile> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .at(path)?;
        Ok(AppendFile::wrap(path, file, 0, buffer_bytes))
    }

    /// Like [`AppendFile::create_new`] or [`AppendFile::open_append`] (`append`), written with
    /// `O_DIRECT` when the filesystem supports it (see [`super::direct`]); otherwise through
    /// the page cache as usual, with a warning in the log.
    pub fn open_direct(path: &Path, buffer_bytes: usize, append: bool) -> Result<AppendFile> {
        match DirectSink::open(path, buffer_bytes, append).at(path)? {
            Some((sink, len)) => Ok(AppendFile {
                path: path.to_path_buf(),
                out: Sink::Direct(sink),
                len,
                failed: None,
            }),
            None => {
                tracing::warn!(
                    path = %path.display(),
                    "the filesystem refuses O_DIRECT: writing through the page cache"
                );
                match append {
                    false => AppendFile::create_new(path, buffer_bytes),
                    true => AppendFile::open_append(path, buffer_bytes),
                }
            }
        }
    }

    /// Whether the file is written with `O_DIRECT`.
    pub fn is_direct(&self) -> bool {
        matches!(self.out, Sink::Direct(_))
    }

    /// Opens `path` (creating it when missing) to append after its current end.
    pub fn open_append(path: &Path, buffer_bytes: usize) -> Result<AppendFile> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .at(path)?;
        let len = file.metadata().at(path)?.len();
        Ok(AppendFile::wrap(path, file, len, buffer_bytes))
    }

    fn wrap(path: &Path, file: File, len: u64, buffer_bytes: usize) -> AppendFile {
        AppendFile {
            path: path.to_path_buf(),
            out: Sink::Buffered(BufWriter::with_capacity(buffer_bytes, file)),
            len,
            failed: None,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes appended so far, including what is still buffered.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing has been appended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(msg) => Err(Error::Io {
                path: self.path.clone(),
                source: std::io::Error::other(format!("earlier failure, not retried: {msg}")),
            }),
        }
    }

    fn guard<T>(&mut self, r: std::io::Result<T>) -> Result<T> {
        r.map_err(|e| {
            self.failed = Some(e.to_string());
            Error::io(&self.path, e)
        })
    }

    /// Appends `bytes` (buffered).
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.check()?;
        let r = self.out.write_all(bytes);
        self.guard(r)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Hands buffered bytes to the kernel: they then survive a crash of this process.
    pub fn flush(&mut self) -> Result<()> {
        self.check()?;
        let r = self.out.flush();
        self.guard(r)
    }

    /// Flushes and fdatasyncs: the bytes then survive a power cut.
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        let r = match &self.out {
            Sink::Buffered(w) => w.get_ref().sync_data(),
            Sink::Direct(d) => d.sync_data(),
        };
        self.guard(r)
    }

    /// Flushes and syncs, then closes. Call this; dropping only flushes, best effort.
    pub fn finish(mut self) -> Result<()> {
        self.sync()
    }
}

/// Where appended bytes go.
enum Sink {
    Buffered(BufWriter<File>),
    Direct(DirectSink),
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Buffered(w) => w.write_all(bytes),
            Sink::Direct(d) => d.write_all(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Buffered(w) => w.flush(),
            Sink::Direct(d) => d.flush(),
        }
    }
}
