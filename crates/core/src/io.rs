//! Reading untrusted files with a size limit (one implementation for `meta.json`, `.gmeta`,
//! zarr metadata and zarr chunks), and mapping a file that may be empty (one implementation
//! for the `raw`, `lzmaf`, `mjpg` and gulp readers).

use std::io::Read;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, IoContext, Result};

/// Reads a whole file into `buf` (cleared first), refusing one over `limit` bytes before
/// reading it, and never reading past the limit if the file grows meanwhile. `what` names the
/// kind of file in the error. `Ok(false)` when the file does not exist.
pub(crate) fn read_limited_into(
    path: &Path,
    limit: u64,
    what: &str,
    buf: &mut Vec<u8>,
) -> Result<bool> {
    buf.clear();
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(path, e)),
    };
    let len = file.metadata().at(path)?.len();
    let too_large = |got| Error::TooLarge {
        what: format!("{what} {}", path.display()),
        got,
        limit,
    };
    if len > limit {
        return Err(too_large(len));
    }
    buf.reserve(len as usize);
    file.take(limit + 1).read_to_end(buf).at(path)?;
    if buf.len() as u64 > limit {
        return Err(too_large(buf.len() as u64));
    }
    Ok(true)
}

/// Like [`read_limited_into`] into a new buffer; `Ok(None)` when the file does not exist.
pub(crate) fn read_limited(path: &Path, limit: u64, what: &str) -> Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    Ok(read_limited_into(path, limit, what, &mut buf)?.then_some(buf))
}

/// Reads the file at `path`, refusing one over `limit` bytes (`what` names it in the error),
/// a missing file being an error too (`read_limited` in this crate, made public for readers
/// outside it, e.g. the Python binding, that must apply the same limits).
pub fn read_limited_required(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
    read_limited(path, limit, what)?.ok_or_else(|| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        )
    })
}

/// Maps the file at `path` read-only and returns the map with the file's length. The map is
/// `None` when the file is empty: mapping an empty file is an error on Linux, and an empty
/// channel or data file is a normal thing to read.
///
/// # Safety
///
/// The file must not be truncated while the map lives: reading a page cut from the file
/// raises SIGBUS. Each caller says why its files are not (append-only channels, write-once
/// data files), the contract numpy's memmap makes too.
pub(crate) unsafe fn map_possibly_empty(path: &Path) -> Result<(Option<Mmap>, u64)> {
    let file = std::fs::File::open(path).at(path)?;
    let len = file.metadata().at(path)?.len();
    if len == 0 {
        return Ok((None, 0));
    }
    // SAFETY: read-only map; the caller upholds the no-truncation contract above.
    let map = unsafe { Mmap::map(&file) }.at(path)?;
    Ok((Some(map), len))
}

/// A file's length; `None` when it does not exist.
pub(crate) fn file_len(path: &Path) -> Result<Option<u64>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(m.len())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Cuts the file at `path` to `len` bytes and syncs it (recovery).
pub(crate) fn truncate_synced(path: &Path, len: u64) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .at(path)?;
    f.set_len(len).at(path)?;
    f.sync_all().at(path)
}
