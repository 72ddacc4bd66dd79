//! An append-only file with a user-space buffer and a remembered failure.
//!
//! All channel writers sit on this. Once a write or fsync has failed, the file is not trusted
//! again: every later call returns the first error (redb's rule; after a failed fsync the
//! kernel may have dropped dirty pages, so retrying could report success for lost data).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// Default user-space buffer per channel file.
pub const DEFAULT_BUFFER_BYTES: usize = 256 * 1024;

/// An append-only file.
pub struct AppendFile {
    path: PathBuf,
    out: BufWriter<File>,
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
            out: BufWriter::with_capacity(buffer_bytes, file),
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
        let r = self.out.get_ref().sync_data();
        self.guard(r)
    }

    /// Flushes and syncs, then closes. Call this; dropping only flushes, best effort.
    pub fn finish(mut self) -> Result<()> {
        self.sync()
    }
}
