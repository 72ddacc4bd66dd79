//! The directory store (a NAS mount): an object is the file at `<root>/<key>`, written whole
//! and durably (temporary file, fsync, rename, fsync of the directory), so a reader never
//! sees half of one. An upload in parts is staged in `<root>/.roverlog-uploads/<id>` (each
//! part written at its offset and fsynced) and renamed into place when complete.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use roverlog_core::format::meta::{create_dir_all_durable, sync_dir, write_file_atomic};

use crate::{md5_hex, ObjectInfo, PartTag, StoreError, UploadId};

/// Where unfinished uploads are staged, below the root.
pub const STAGING: &str = ".roverlog-uploads";

pub struct DirStore {
    root: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io {
        path: path.to_path_buf(),
        error,
    }
}

fn core_io(path: &Path, e: roverlog_core::error::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        error: std::io::Error::other(e.to_string()),
    }
}

impl DirStore {
    pub fn open(root: PathBuf) -> Result<DirStore, crate::OpenError> {
        if !root.is_dir() {
            return Err(crate::OpenError::NoDirectory { path: root });
        }
        Ok(DirStore { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<key>`; keys are relative `/`-separated paths without `.` or `..`.
    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        let bad = key.is_empty()
            || key.starts_with('/')
            || key
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..");
        if bad {
            return Err(StoreError::Io {
                path: self.root.join(key),
                error: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a relative object key",
                ),
            });
        }
        Ok(self.root.join(key))
    }

    fn staged(&self, upload: &UploadId) -> PathBuf {
        self.root.join(STAGING).join(&upload.0)
    }

    pub fn check(&self) -> Result<(), StoreError> {
        // Writable: a probe file, written and removed.
        let probe = self
            .root
            .join(format!(".roverlog-probe-{}", std::process::id()));
        fs::write(&probe, b"").map_err(io(&probe))?;
        fs::remove_file(&probe).map_err(io(&probe))
    }

    pub fn put(&self, key: &str, data: &[u8]) -> Result<ObjectInfo, StoreError> {
        let path = self.path(key)?;
        let parent = path.parent().expect("below the root");
        create_dir_all_durable(parent).map_err(|e| core_io(parent, e))?;
        write_file_atomic(&path, data).map_err(|e| core_io(&path, e))?;
        Ok(ObjectInfo {
            size: data.len() as u64,
            etag: Some(md5_hex(data)),
        })
    }

    pub fn create_upload(&self, key: &str) -> Result<UploadId, StoreError> {
        self.path(key)?;
        let dir = self.root.join(STAGING);
        create_dir_all_durable(&dir).map_err(|e| core_io(&dir, e))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = UploadId(format!("{}-{nanos}", std::process::id()));
        let path = self.staged(&id);
        File::create(&path).map_err(io(&path))?;
        sync_dir(&dir).map_err(|e| core_io(&dir, e))?;
        Ok(id)
    }

    pub fn put_part(
        &self,
        key: &str,
        upload: &UploadId,
        offset: u64,
        data: &[u8],
    ) -> Result<PartTag, StoreError> {
        let path = self.staged(upload);
        let f = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => StoreError::NoSuchUpload {
                    store: self.root.display().to_string(),
                    key: key.to_string(),
                    upload: upload.0.clone(),
                },
                _ => StoreError::Io {
                    path: path.clone(),
                    error: e,
                },
            })?;
        f.write_all_at(data, offset).map_err(io(&path))?;
        f.sync_data().map_err(io(&path))?;
        Ok(PartTag {
            etag: md5_hex(data),
            token: format!("{offset}+{}", data.len()),
        })
    }

    pub fn complete_upload(
        &self,
        key: &str,
        upload: &UploadId,
        parts: &[PartTag],
    ) -> Result<ObjectInfo, StoreError> {
        let dst = self.path(key)?;
        let staged = self.staged(upload);
        if !staged.exists() {
            return Err(StoreError::NoSuchUpload {
                store: self.root.display().to_string(),
                key: key.to_string(),
                upload: upload.0.clone(),
            });
        }
        let end = parts
            .iter()
            .filter_map(|p| {
                let (o, n) = p.token.split_once('+')?;
                Some(o.parse::<u64>().ok()? + n.parse::<u64>().ok()?)
            })
            .max()
            .unwrap_or(0);
        let f = OpenOptions::new()
            .write(true)
            .open(&staged)
            .map_err(io(&staged))?;
        f.set_len(end).map_err(io(&staged))?;
        f.sync_all().map_err(io(&staged))?;
        let parent = dst.parent().expect("below the root");
        create_dir_all_durable(parent).map_err(|e| core_io(parent, e))?;
        fs::rename(&staged, &dst).map_err(io(&dst))?;
        sync_dir(parent).map_err(|e| core_io(parent, e))?;
        let staging = self.root.join(STAGING);
        sync_dir(&staging).map_err(|e| core_io(&staging, e))?;
        Ok(ObjectInfo {
            size: end,
            etag: Some(crate::multipart_etag(parts.iter().map(|p| p.etag.as_str()))),
        })
    }

    pub fn abort_upload(&self, upload: &UploadId) -> Result<(), StoreError> {
        let path = self.staged(upload);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(StoreError::Io { path, error: e })
            }
            _ => Ok(()),
        }
    }

    pub fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let path = self.path(key)?;
        match fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(Some(ObjectInfo {
                size: m.len(),
                etag: None,
            })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::Io { path, error: e }),
        }
    }

    pub fn get_range(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        let path = self.path(key)?;
        let mut f = File::open(&path).map_err(io(&path))?;
        f.seek(SeekFrom::Start(range.start)).map_err(io(&path))?;
        let mut out = Vec::new();
        f.take(range.end.saturating_sub(range.start))
            .read_to_end(&mut out)
            .map_err(io(&path))?;
        Ok(out)
    }

    /// Every object below the root (the staging directory left out): key and size, sorted.
    /// A root that is gone lists as empty.
    pub fn list(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(StoreError::Io {
                        path: dir,
                        error: e,
                    })
                }
            };
            for entry in entries {
                let entry = entry.map_err(io(&dir))?;
                let path = entry.path();
                let ft = entry.file_type().map_err(io(&path))?;
                if ft.is_dir() && path != self.root.join(STAGING) {
                    stack.push(path);
                } else if ft.is_file() {
                    let len = entry.metadata().map_err(io(&path))?.len();
                    let key = path.strip_prefix(&self.root).unwrap_or(&path);
                    out.push((key.to_string_lossy().into_owned(), len));
                }
            }
        }
        out.sort();
        Ok(out)
    }
}
