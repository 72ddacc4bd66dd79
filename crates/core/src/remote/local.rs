//! [`TraceFiles`] over a local directory, read with `pread` (the same seam the object store
//! implements; the verbs keep the mapped readers for local traces).

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{BackendError, RangeFile, TraceFiles};

/// A trace directory read through the range seam.
pub struct LocalFiles {
    dir: PathBuf,
}

impl LocalFiles {
    pub fn new(dir: &Path) -> LocalFiles {
        LocalFiles {
            dir: dir.to_path_buf(),
        }
    }
}

struct LocalFile {
    file: std::fs::File,
    len: u64,
}

impl RangeFile for LocalFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_range(&self, range: Range<u64>) -> Result<Vec<u8>, BackendError> {
        let mut buf = vec![0u8; range.end.saturating_sub(range.start) as usize];
        self.file.read_exact_at(&mut buf, range.start)?;
        Ok(buf)
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u64)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        if ft.is_dir() {
            walk(root, &entry.path(), out)?;
        } else if ft.is_file() {
            let rel = entry.path();
            let rel = rel.strip_prefix(root).unwrap_or(&rel);
            out.push((rel.to_string_lossy().into_owned(), entry.metadata()?.len()));
        }
    }
    Ok(())
}

impl TraceFiles for LocalFiles {
    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn list(&self) -> Result<Vec<(String, u64)>, BackendError> {
        let mut out = Vec::new();
        match walk(&self.dir, &self.dir, &mut out) {
            Ok(()) => Ok(out),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.dir.exists() => {
                Ok(Vec::new())
            }
            Err(e) => Err(Box::new(e)),
        }
    }

    fn open(&self, path: &str, len: u64) -> Result<Box<dyn RangeFile>, BackendError> {
        let file = std::fs::File::open(self.dir.join(path))?;
        Ok(Box::new(LocalFile { file, len }))
    }
}
