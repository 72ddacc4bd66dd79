//! An append-only file with a user-space buffer and a remembered failure.
//!
//! All channel writers sit on this. Once a write or fsync has failed, the file is not trusted
//! again: every later call returns the first error (redb's rule; after a failed fsync the
//! kernel may have dropped dirty pages, so retrying could report success for lost data).
//!
//! Large `raw` channels can be written with `O_DIRECT` instead ([`AppendFile::open_direct`],
//! [`super::direct`]): same contract, no page-cache copy.
//!
//! Writeback starts early: once [`AppendFile::set_writeback_bytes`] bytes have reached the
//! kernel since the last start, `sync_file_range(SYNC_FILE_RANGE_WRITE)` asks it to begin
//! writing them to the device without waiting (RocksDB's `bytes_per_sync`). Without this the
//! kernel keeps them dirty until its own thresholds or the next fsync, which then has the whole
//! interval to write at once; with it, disk writes overlap with appending, fsyncs are short, and
//! less dirty data is at risk. It promises nothing: durability still comes only from `sync`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::direct::DirectSink;
use crate::error::{Error, IoContext, Result};

/// Default user-space buffer per channel file.
pub const DEFAULT_BUFFER_BYTES: usize = 256 * 1024;

/// Default for [`AppendFile::set_writeback_bytes`].
pub const DEFAULT_WRITEBACK_BYTES: u64 = 8 << 20;

/// An append-only file.
pub struct AppendFile {
    path: PathBuf,
    out: Sink,
    /// Bytes appended, buffered ones included.
    len: u64,
    /// The first failure, if any: the file is unusable from then on.
    failed: Option<String>,
    /// Start writeback after this many new bytes reached the kernel; 0: never.
    writeback_bytes: u64,
    /// Writeback was started for the bytes before this offset.
    writeback_from: u64,
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
                writeback_bytes: 0,
                writeback_from: len,
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
            writeback_bytes: 0,
            writeback_from: len,
        }
    }

    /// Starts writeback whenever `bytes` more have reached the kernel (see the module docs);
    /// 0 (the default) never does. `O_DIRECT` files bypass the page cache and ignore it.
    pub fn set_writeback_bytes(&mut self, bytes: u64) {
        self.writeback_bytes = bytes;
    }

    /// Where writeback was last started: the kernel was asked to write every byte before it
    /// (not necessarily done yet). For tests and diagnostics.
    pub fn writeback_started_to(&self) -> u64 {
        self.writeback_from
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
                error: std::io::Error::other(format!("earlier failure, not retried: {msg}")),
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
        self.start_writeback()
    }

    /// See the module docs. Errors are those of a failed write (`EIO`): the file is failed.
    fn start_writeback(&mut self) -> Result<()> {
        let Sink::Buffered(w) = &self.out else {
            return Ok(());
        };
        // Bytes still in the `BufWriter` have not reached the kernel.
        let end = self.len - w.buffer().len() as u64;
        if self.writeback_bytes == 0 || end - self.writeback_from < self.writeback_bytes {
            return Ok(());
        }
        let r = sync_file_range_write(w.get_ref(), self.writeback_from, end - self.writeback_from);
        self.writeback_from = end;
        self.writeback_outcome(r)
    }

    /// What the result of starting writeback means for the file: a filesystem or file type
    /// that cannot do it (`EINVAL`, `ESPIPE`) loses only the head start, and writeback stays
    /// off for this file; any other error is a failed write, and fails the file.
    fn writeback_outcome(&mut self, r: std::io::Result<()>) -> Result<()> {
        match r {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ESPIPE)) => {
                self.writeback_bytes = 0;
                Ok(())
            }
            r => self.guard(r),
        }
    }

    /// Whether appending `n` more bytes may hand buffered bytes to the kernel (the buffer
    /// spills). A writer that keeps one file behind another (an index behind its data, `ts`
    /// behind the data channels) flushes the leading files first when this is true.
    pub fn append_reaches_kernel(&self, n: usize) -> bool {
        match &self.out {
            Sink::Buffered(w) => w.buffer().len() + n >= w.capacity(),
            Sink::Direct(d) => d.append_reaches_kernel(n),
        }
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

/// `sync_file_range(SYNC_FILE_RANGE_WRITE)`: starts writeback of `len` bytes from `offset`
/// without waiting for it.
#[cfg(target_os = "linux")]
fn sync_file_range_write(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Ok(());
    };
    // SAFETY: a plain syscall on a descriptor `file` owns; it touches no memory of ours.
    let r = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(not(target_os = "linux"))]
fn sync_file_range_write(_file: &File, _offset: u64, _len: u64) -> std::io::Result<()> {
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn chunk(i: usize) -> Vec<u8> {
        (0..100_000).map(|j| (i * 7 + j) as u8).collect()
    }

    #[test]
    fn writeback_starts_every_threshold_and_changes_no_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw");
        let mut f = AppendFile::create_new(&path, 256 << 10).unwrap();
        f.set_writeback_bytes(MIB);
        let mut want = Vec::new();
        let mut starts = Vec::new();
        for i in 0..40 {
            let c = chunk(i);
            f.append(&c).unwrap();
            want.extend_from_slice(&c);
            let at = f.writeback_started_to();
            if starts.last() != Some(&at) {
                starts.push(at);
            }
            // Never past what was appended, never a threshold and a buffer behind it.
            assert!(at <= f.len());
            assert!(f.len() - at < MIB + (256 << 10), "{} vs {at}", f.len());
        }
        // 4 MB appended: started at 0 and then once per MiB or so, each step at least 1 MiB.
        assert!(starts.len() >= 4, "{starts:?}");
        assert!(starts.windows(2).all(|w| w[1] - w[0] >= MIB), "{starts:?}");
        f.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn writeback_refused_by_the_kernel_turns_itself_off_and_loses_nothing() {
        use std::io::Read;
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;

        // sync_file_range on a FIFO fails with ESPIPE: the real refusal, through the syscall.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        let mut f = AppendFile::open_append(&path, 4096).unwrap();
        f.set_writeback_bytes(4096);
        // Larger than the buffer: it goes straight to the kernel, and writeback is asked for.
        f.append(&[1; 10_000]).unwrap();
        assert_eq!(f.writeback_started_to(), 10_000, "asked once");
        f.append(&[2; 10_000]).unwrap();
        assert_eq!(
            f.writeback_started_to(),
            10_000,
            "not asked again after the refusal"
        );
        f.flush().unwrap();
        let mut got = vec![0; 20_000];
        reader.read_exact(&mut got).unwrap();
        assert!(got[..10_000].iter().all(|&b| b == 1) && got[10_000..].iter().all(|&b| b == 2));
    }

    #[test]
    fn writeback_error_other_than_unsupported_fails_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw");
        let mut f = AppendFile::create_new(&path, 4096).unwrap();
        f.set_writeback_bytes(4096);
        // EINVAL (a filesystem without it) is not a failure: writeback just stays off.
        f.writeback_outcome(Err(std::io::Error::from_raw_os_error(libc::EINVAL)))
            .unwrap();
        assert_eq!(f.writeback_bytes, 0);
        f.append(b"kept").unwrap();
        // EIO when starting writeback is a failed write: reported, and the file is not trusted.
        let e = f
            .writeback_outcome(Err(std::io::Error::from_raw_os_error(libc::EIO)))
            .unwrap_err();
        assert!(e.to_string().contains("raw"), "{e}");
        for e in [f.append(b"x").unwrap_err(), f.sync().unwrap_err()] {
            assert!(
                e.to_string().contains("earlier failure, not retried"),
                "{e}"
            );
        }
    }

    #[test]
    fn writeback_off_by_default_and_counts_from_the_end_when_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw");
        let mut f = AppendFile::create_new(&path, 4096).unwrap();
        for i in 0..30 {
            f.append(&chunk(i)).unwrap();
        }
        assert_eq!(f.writeback_started_to(), 0);
        f.finish().unwrap();

        let mut f = AppendFile::open_append(&path, 4096).unwrap();
        assert_eq!(f.writeback_started_to(), 3_000_000);
        f.set_writeback_bytes(MIB);
        f.append(&chunk(0)).unwrap();
        assert_eq!(f.writeback_started_to(), 3_000_000, "not yet 1 MiB new");
        for i in 0..10 {
            f.append(&chunk(i)).unwrap();
        }
        assert!(f.writeback_started_to() >= 3_000_000 + MIB);
        f.finish().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4_100_000);
    }
}
