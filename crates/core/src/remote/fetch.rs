//! One file of a trace fetched whole: what the trace and channel readers share (`meta.json`,
//! `ts`, the small indexes), so neither reaches into the other.

use std::collections::BTreeMap;

use super::{RemoteError, TraceFiles};

/// File `path` of `files` whole (one request), refused over `limit` bytes.
pub(super) fn read_whole(
    files: &dyn TraceFiles,
    sizes: &BTreeMap<String, u64>,
    path: &str,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, RemoteError> {
    let file = format!("{}/{path}", files.location());
    let len = *sizes.get(path).ok_or_else(|| RemoteError::Backend {
        location: file.clone(),
        error: "no such file".into(),
    })?;
    if len > limit {
        return Err(RemoteError::TooLarge {
            file,
            what,
            got: len,
            limit,
        });
    }
    let backend = |error| RemoteError::Backend {
        location: file.clone(),
        error,
    };
    let f = files.open(path, len).map_err(backend)?;
    if len == 0 {
        return Ok(Vec::new());
    }
    f.read_range(0..len).map_err(backend)
}
