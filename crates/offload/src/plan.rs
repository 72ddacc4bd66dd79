//! The traces below DATA and, for one trace, the files to send (as `roverlog checksum`
//! lists them), each with the size and mtime that later tell whether it changed.

use std::path::{Path, PathBuf};

use crate::journal::{FileEntry, FileState, TraceEntry};
use crate::upload::stat;
use crate::OffloadError;

/// Every trace below `data` (as `roverlog list` finds them), oldest name first, with its
/// name at the destination: its path below `data`, or `data`'s own name when `data` is a
/// trace. The journal's directory (`<data>/_roverlog/`) is no trace.
pub fn traces(data: &Path) -> Result<Vec<(PathBuf, String)>, OffloadError> {
    let found = roverlog_core::format::find_traces(data).map_err(OffloadError::Find)?;
    Ok(found
        .into_iter()
        .filter_map(|dir| {
            let name = if dir == data {
                data.canonicalize()
                    .ok()?
                    .file_name()?
                    .to_string_lossy()
                    .into_owned()
            } else {
                let rel = dir.strip_prefix(data).ok()?;
                if rel.starts_with("_roverlog") {
                    return None;
                }
                rel.to_string_lossy().into_owned()
            };
            Some((dir, name))
        })
        .collect())
}

/// The trace's files, all pending.
pub fn plan(dir: &Path) -> Result<TraceEntry, OffloadError> {
    let files = roverlog_core::format::checksum::files(dir).map_err(|e| OffloadError::Read {
        path: dir.to_path_buf(),
        error: e,
    })?;
    let mut entry = TraceEntry::default();
    for rel in files {
        let (size, mtime_ns) = stat(&dir.join(&rel))?;
        entry.bytes += size;
        entry.files.push(FileEntry {
            path: rel.to_string_lossy().into_owned(),
            size,
            mtime_ns,
            state: FileState::Pending,
            replaced: false,
            again_below: 0,
        });
    }
    Ok(entry)
}

/// A digest of the files' paths, sizes and mtimes: what was verified, compared again before
/// a deletion.
pub fn fingerprint(files: &[FileEntry]) -> String {
    let mut text = String::new();
    for f in files {
        text.push_str(&format!("{}\0{}\0{}\n", f.path, f.size, f.mtime_ns));
    }
    roverlog_store::md5_hex(text.as_bytes())
}
