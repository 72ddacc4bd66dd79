//! A trace whose files changed after it was planned (a `roverlog compact` run in place while
//! the vehicle is parked, a file rewritten by hand). The run that finds the change fails
//! naming the file ([`OffloadError::Changed`]), deletes nothing, and journals the file in
//! its trace's `changed` list; the next run plans that trace again here, before it sends
//! anything of it, keeping every verification that still holds:
//!
//! - a file whose size and mtime are as planned (and that no run found changed) keeps its
//!   state: a verified one stays done; an upload goes on (its parts acknowledged before are
//!   read again and must still hash the same);
//! - a changed file not verified yet: its multipart upload, if any, is aborted at the store,
//!   and it is sent again from its start;
//! - a changed file already verified: hashed again. The same bytes (only its mtime moved)
//!   stay done; other bytes are sent again, replacing the object of the older version at
//!   the destination: said loudly, and counted as re-sent;
//! - a file new in the trace is sent; one gone from it is named (its object stays at the
//!   destination: nothing is deleted there).
//!
//! A verified trace keeps no file list, only a fingerprint of it; when that no longer
//! matches (checked before a deletion), the trace is marked `changed_since_verified`, and
//! the re-plan takes its files as sent from the destination (its MD5 CSV, the objects' sizes
//! and ETags) and hashes each local file again: the same rules then apply.
//!
//! The aborts go first, then the new plan is journalled (the `changed` list emptied with
//! it): a kill in between leaves the list, and the next run plans again (aborting an upload
//! the store no longer knows is fine). The trace is called verified, and may be deleted
//! locally, only once every file of the new plan is.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use md5::Digest;
use roverlog_store::{to_hex, StoreError, UploadId};

use roverlog_core::format::checksum;

use crate::journal::{FileEntry, FileState};
use crate::upload::sending;
use crate::{plan, Job, OffloadError};

/// The mtime of a file rebuilt from the destination: matches no file's.
const MTIME_UNKNOWN: i128 = i128::MIN;

impl Job<'_> {
    /// Journals that the file at `path` (of trace `name`, at `dir`) was found changed: the
    /// next run plans the trace again.
    pub(crate) fn mark_changed(
        &mut self,
        dir: &Path,
        name: &str,
        path: &Path,
    ) -> Result<(), OffloadError> {
        let Some(t) = self.journal.traces.get_mut(name) else {
            return Ok(());
        };
        let rel = path
            .strip_prefix(dir)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        if !t.changed.contains(&rel) {
            t.changed.push(rel);
        }
        self.save()
    }

    /// Plans trace `name` (at `dir`) again after a run found files of it changed.
    pub(crate) fn replan(&mut self, dir: &Path, name: &str) -> Result<(), OffloadError> {
        let mut old = self.journal.traces[name].clone();
        if old.changed_since_verified && old.files.is_empty() {
            old.files = self.files_as_sent(name)?;
        }
        let suspects: BTreeSet<&str> = old.changed.iter().map(String::as_str).collect();
        let mut was: BTreeMap<&str, &FileEntry> =
            old.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut now = plan::plan(dir)?;
        for f in &mut now.files {
            let path = dir.join(&f.path);
            let key = format!("{name}/{}", f.path);
            let Some(o) = was.remove(f.path.as_str()) else {
                self.progress.note(&format!(
                    "{}: new in the trace since it was planned: it is sent",
                    path.display()
                ));
                continue;
            };
            f.replaced = o.replaced;
            f.again_below = o.again_below;
            let same =
                o.size == f.size && o.mtime_ns == f.mtime_ns && !suspects.contains(f.path.as_str());
            if same {
                f.state = o.state.clone();
                continue;
            }
            match &o.state {
                FileState::Pending => {}
                FileState::Uploading {
                    upload,
                    part_size,
                    parts,
                } => {
                    self.abort(&path, &key, upload)?;
                    let acked: u64 = parts
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.is_some())
                        .map(|(k, _)| (*part_size).min(o.size.saturating_sub(k as u64 * part_size)))
                        .sum();
                    f.again_below = f.again_below.max(acked);
                    self.progress.note(&format!(
                        "{}: changed before its upload was complete: that upload aborted, the \
                         file is sent again from its start",
                        path.display()
                    ));
                }
                FileState::Done { md5, .. } => {
                    let now_md5 = md5_of(&path)?;
                    if now_md5 == *md5 && f.size == o.size {
                        f.state = o.state.clone();
                        if o.mtime_ns != MTIME_UNKNOWN {
                            self.progress.note(&format!(
                                "{}: its mtime changed, not its bytes: kept as verified",
                                path.display()
                            ));
                        }
                    } else {
                        f.replaced = true;
                        f.again_below = f.again_below.max(o.size);
                        self.progress.note(&format!(
                            "{}: CHANGED AFTER IT WAS VERIFIED at the destination ({} bytes, \
                             MD5 {md5}; now {} bytes, MD5 {now_md5}): the object {key} there is \
                             of the older version; the new one is sent to replace it",
                            path.display(),
                            o.size,
                            f.size
                        ));
                    }
                }
            }
        }
        for (rel, o) in was {
            let key = format!("{name}/{rel}");
            let path = dir.join(rel);
            match &o.state {
                FileState::Uploading { upload, .. } => self.abort(&path, &key, upload)?,
                FileState::Done { .. } => self.progress.note(&format!(
                    "{}: gone from the trace since it was verified: its object {key} stays at \
                     the destination",
                    path.display()
                )),
                FileState::Pending => {}
            }
        }
        self.journal.traces.insert(name.to_string(), now);
        self.save()
    }

    /// The files of a verified trace as they were sent (its file list was dropped when it
    /// was verified): the rows of its `<trace>.md5.csv` at the destination, each with its
    /// object's size and ETag. Their mtimes are not known, so the re-plan hashes each file
    /// again. A file with no row or no object is sent as a new one.
    fn files_as_sent(&self, name: &str) -> Result<Vec<FileEntry>, OffloadError> {
        let csv = format!("{name}.md5.csv");
        let Some(info) = self.store.head(&csv)? else {
            return Ok(Vec::new());
        };
        let bytes = self.store.get_range(&csv, 0..info.size)?;
        let mut files = Vec::new();
        for line in String::from_utf8_lossy(&bytes).lines().skip(1) {
            let [path, md5] = <[String; 2]>::try_from(checksum::fields(line)).unwrap_or_default();
            if path.is_empty() {
                continue;
            }
            let Some(h) = self.store.head(&format!("{name}/{path}"))? else {
                continue;
            };
            files.push(FileEntry {
                path,
                size: h.size,
                mtime_ns: MTIME_UNKNOWN,
                state: FileState::Done { etag: h.etag, md5 },
                replaced: false,
                again_below: 0,
            });
        }
        Ok(files)
    }

    /// Aborts an upload of the older version of a file; one the store no longer knows is gone
    /// already.
    fn abort(&self, path: &Path, key: &str, upload: &str) -> Result<(), OffloadError> {
        match self.store.abort_upload(key, &UploadId(upload.to_string())) {
            Ok(()) | Err(StoreError::NoSuchUpload { .. }) => Ok(()),
            Err(e) => Err(sending(path, key)(e)),
        }
    }
}

/// The MD5 (hex) of the file at `path`, read in 8 MiB pieces.
fn md5_of(path: &Path) -> Result<String, OffloadError> {
    let read = |error| OffloadError::Read {
        path: path.to_path_buf(),
        error,
    };
    let mut f = std::fs::File::open(path).map_err(read)?;
    let mut h = md5::Md5::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = f.read(&mut buf).map_err(read)?;
        if n == 0 {
            return Ok(to_hex(&h.finalize()));
        }
        h.update(&buf[..n]);
    }
}
