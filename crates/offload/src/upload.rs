//! What one file's upload rests on: its part size, the checks that it did not change, and
//! the check of its object against what was read (the sending itself: `crate::send`).
//!
//! What is checked, for every object:
//! - each part's (or whole object's) ETag, the MD5 of what the store received, equals the MD5
//!   of what was read (and S3 checked each body's `x-amz-checksum-sha256` on receipt);
//! - after completion, the object's size, and its ETag (S3: the MD5 of the parts' MD5s) or,
//!   from a directory, the MD5 of the object read back, equal the local file's;
//! - the local file's size and mtime are those it had when the trace was planned, and on
//!   resuming, the parts already sent still read the same: otherwise the file changed during
//!   the upload, an error naming it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use md5::Digest;
use roverlog_store::{to_hex, StoreError};

use crate::journal::FileEntry;
use crate::{Job, OffloadError};

/// Parts of at least this size (S3's minimum is 5 MiB), more for a file that would need
/// more than [`MAX_PARTS`].
pub const PART_SIZE: u64 = 8 << 20;
/// S3 allows 10,000 parts; this leaves room.
pub const MAX_PARTS: u64 = 9_000;

/// The part size for a file of `size` bytes.
pub fn part_size(min: u64, size: u64) -> u64 {
    min.max(size.div_ceil(MAX_PARTS))
}

/// The local file's size and mtime (ns).
pub fn stat(path: &Path) -> Result<(u64, i128), OffloadError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).map_err(|e| OffloadError::Read {
        path: path.to_path_buf(),
        error: e,
    })?;
    Ok((
        m.len(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    ))
}

pub(crate) fn read_at(
    f: &File,
    path: &Path,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, OffloadError> {
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            OffloadError::Changed {
                path: path.to_path_buf(),
                what: format!("shorter than the {} bytes it had", offset + len),
            }
        } else {
            OffloadError::Read {
                path: path.to_path_buf(),
                error: e,
            }
        }
    })?;
    Ok(buf)
}

/// An error of the store while sending `path` to `key`, naming both.
pub(crate) fn sending<'a>(
    path: &'a Path,
    key: &'a str,
) -> impl FnOnce(StoreError) -> OffloadError + 'a {
    move |error| OffloadError::Send {
        path: path.to_path_buf(),
        key: key.to_string(),
        error: Box::new(error),
    }
}

/// Checks the local file still has the size and mtime it was planned with.
pub fn check_unchanged(path: &Path, entry: &FileEntry) -> Result<(), OffloadError> {
    let (size, mtime) = stat(path)?;
    if size != entry.size || mtime != entry.mtime_ns {
        return Err(OffloadError::Changed {
            path: path.to_path_buf(),
            what: format!(
                "size {} mtime {} ns when planned, now size {size} mtime {mtime} ns",
                entry.size, entry.mtime_ns
            ),
        });
    }
    Ok(())
}

impl Job<'_> {
    /// Checks the object at `key` against the local file: size, and the ETag the store
    /// computed on receipt (S3) or the MD5 of the object read back (a directory).
    pub(crate) fn verify(
        &mut self,
        key: &str,
        path: &Path,
        size: u64,
        etag: Option<&str>,
        md5: &str,
    ) -> Result<(), OffloadError> {
        let mismatch = |what: &str, expected: String, got: String| OffloadError::Mismatch {
            path: path.to_path_buf(),
            key: key.to_string(),
            what: what.to_string(),
            expected,
            got,
        };
        let Some(info) = self.store.head(key)? else {
            return Err(mismatch("object", "present".into(), "missing".into()));
        };
        if info.size != size {
            return Err(mismatch("size", size.to_string(), info.size.to_string()));
        }
        if self.store.verifies_on_receipt() {
            if info.etag.as_deref() != etag {
                return Err(mismatch(
                    "ETag",
                    etag.unwrap_or("").to_string(),
                    info.etag.unwrap_or_default(),
                ));
            }
        } else {
            let mut h = md5::Md5::new();
            let mut off = 0;
            while off < size {
                let n = (size - off).min(PART_SIZE);
                h.update(self.store.get_range(key, off..off + n)?);
                off += n;
            }
            let got = to_hex(&h.finalize());
            if got != md5 {
                return Err(mismatch("MD5 read back", md5.to_string(), got));
            }
        }
        Ok(())
    }
}
