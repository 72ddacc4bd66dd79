//! Freeing the vehicle's disk, only ever of verified traces: `--delete` removes each one once
//! verified; `--keep-free 20%` removes the oldest verified ones while DATA's filesystem has
//! less free space than that, and never an unverified one.
//!
//! A removal is journalled (`deleting`) before its first file goes and (`deleted`) after the
//! directory is gone, so a kill in between finishes it on the next run; before it starts,
//! the trace's files must be those that were verified (paths, sizes, mtimes): otherwise the
//! run fails, nothing is deleted, and the trace is no longer verified (the next run plans it
//! again, `crate::replan`).

use std::path::{Path, PathBuf};

use crate::{plan, Job, OffloadError};

/// Free and total bytes of the filesystem holding `path`.
pub fn free_space(path: &Path) -> Result<(u64, u64), OffloadError> {
    use std::os::unix::ffi::OsStrExt;
    let c =
        std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| OffloadError::Statvfs {
            path: path.to_path_buf(),
            error: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        })?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a statvfs we own.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(OffloadError::Statvfs {
            path: path.to_path_buf(),
            error: std::io::Error::last_os_error(),
        });
    }
    let frsize = st.f_frsize as u64;
    Ok((st.f_bavail as u64 * frsize, st.f_blocks as u64 * frsize))
}

/// Where trace `name` is on the vehicle: below `data`, or `data` itself.
fn local_dir(data: &Path, name: &str) -> PathBuf {
    let below = data.join(name);
    if !below.exists() && data.file_name().is_some_and(|n| n == name) {
        return data.to_path_buf();
    }
    below
}

impl Job<'_> {
    /// Removes every verified trace still on the disk.
    pub(crate) fn delete_verified(&mut self, data: &Path) -> Result<(), OffloadError> {
        let names: Vec<String> = self
            .journal
            .traces
            .iter()
            .filter(|(_, t)| t.verified && !t.deleted)
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            self.delete_trace(data, &name)?;
        }
        Ok(())
    }

    /// Removes the oldest verified traces while the free space is under `fraction`.
    pub(crate) fn keep_free(
        &mut self,
        data: &Path,
        fraction: Option<f64>,
    ) -> Result<(), OffloadError> {
        let Some(fraction) = fraction else {
            return Ok(());
        };
        loop {
            let (free, total) = free_space(data)?;
            if free as f64 >= fraction * total as f64 {
                self.summary.keep_free_unreached = false;
                return Ok(());
            }
            // Names are the recording's local time: the first is the oldest.
            let oldest = self
                .journal
                .traces
                .iter()
                .find(|(_, t)| t.verified && !t.deleted)
                .map(|(n, _)| n.clone());
            let Some(name) = oldest else {
                if !self.summary.keep_free_unreached {
                    self.progress.note(&format!(
                        "--keep-free: {}% free on {}, and no verified trace is left to remove",
                        free * 100 / total.max(1),
                        data.display()
                    ));
                }
                self.summary.keep_free_unreached = true;
                return Ok(());
            };
            self.delete_trace(data, &name)?;
        }
    }

    fn delete_trace(&mut self, data: &Path, name: &str) -> Result<(), OffloadError> {
        let dir = local_dir(data, name);
        let entry = self
            .journal
            .traces
            .get_mut(name)
            .expect("a journalled trace");
        if dir.exists() && !entry.deleting {
            let now = plan::plan(&dir)?;
            let print = plan::fingerprint(&now.files);
            if entry.fingerprint.as_deref() != Some(print.as_str()) {
                // Not deleted, and sent again where it changed by the next run (`replan`).
                entry.verified = false;
                entry.changed_since_verified = true;
                self.save()?;
                return Err(OffloadError::ChangedSinceVerified {
                    path: dir,
                    what: "file list, sizes or mtimes differ".into(),
                });
            }
            entry.deleting = true;
            self.save()?;
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| OffloadError::Delete {
                path: dir.clone(),
                error: e,
            })?;
            if let Some(parent) = dir.parent() {
                // Best effort: the journal is written next either way.
                let _ = roverlog_core::format::meta::sync_dir(parent);
            }
            self.progress.note(&format!(
                "{}: deleted (verified at the destination)",
                dir.display()
            ));
            self.summary.deleted.push(dir);
        }
        let entry = self
            .journal
            .traces
            .get_mut(name)
            .expect("a journalled trace");
        entry.deleted = true;
        entry.deleting = false;
        self.save()
    }
}
