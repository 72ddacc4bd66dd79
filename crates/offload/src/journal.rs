//! The offload journal: what has gone to one destination, kept on the vehicle's disk (by
//! default `<DATA>/_roverlog/offload/<hash of DEST>.json`) and rewritten whole, atomically
//! and fsynced ([`write_file_atomic`]), after every part, file and trace. A kill or a power
//! cut leaves the last version written, so the next run sends again at most the parts that
//! were in flight (`--jobs` of them).
//!
//! Per trace (by its path below DATA): its files as found when it was planned (size and
//! mtime, to tell a file changed since), each `pending`, `uploading` (the store's upload id
//! and the parts it acknowledged, with their MD5s) or `done` (its ETag and MD5); then
//! `verified` once every object was checked, and `deleted` once `--delete` or `--keep-free`
//! removed the local copy. A verified trace's file list is dropped (a fingerprint of it is
//! kept, checked before a deletion), so the journal does not grow with the fleet's history.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use roverlog_core::format::meta::{create_dir_all_durable, write_file_atomic};
use serde::{Deserialize, Serialize};

use crate::OffloadError;

/// The journal format's version. Fields added since (`changed`, `changed_since_verified`,
/// `replaced`, `again_below`) are optional and read as absent from older journals; a roverlog that
/// predates them ignores them and still refuses a changed file, so the version did not move.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Journal {
    pub version: u32,
    /// The destination as given (`s3://bucket/prefix` or a directory).
    pub dest: String,
    /// By trace path below DATA (`/`-separated).
    pub traces: BTreeMap<String, TraceEntry>,
    /// The parts or objects being sent when this version was written (at most `--jobs` of
    /// them): found here on the next run, each sent again is counted as re-sent. (A journal
    /// written when parts went one at a time holds one object here, not a list: read too.)
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub in_flight: Vec<InFlight>,
    /// Bytes handed to the store over every run, counted before each part goes (so a part
    /// a kill interrupted counts): the figure that bounds what kills cost.
    #[serde(default)]
    pub sent: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlight {
    pub trace: String,
    pub file: String,
    pub part: usize,
    pub bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceEntry {
    #[serde(default)]
    pub files: Vec<FileEntry>,
    /// Every object (files and the MD5 CSV) was checked against the local files.
    #[serde(default)]
    pub verified: bool,
    /// Its removal was decided (written before the first file goes): a run that finds it
    /// finishes the removal without checking the files again.
    #[serde(default)]
    pub deleting: bool,
    /// The local trace was removed (after `verified`).
    #[serde(default)]
    pub deleted: bool,
    /// Its bytes, for the summary and `--keep-free`.
    #[serde(default)]
    pub bytes: u64,
    /// Once verified (and its file list dropped): [`crate::plan::fingerprint`] of its files
    /// as sent, checked again before the local copy is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Files (paths below the trace) a run found changed since the trace was planned: that
    /// run failed naming them, and the next one plans the trace again (`replan.rs`)
    /// before it sends anything of it. Absent from journals written before (read as empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// Its files were found changed after it was verified (before a deletion, whose check
    /// is the only look at a verified trace): no longer verified, and the next run plans it
    /// again from what the destination holds (its MD5 CSV and objects).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed_since_verified: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path below the trace, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Modification time when planned, nanoseconds since the epoch.
    pub mtime_ns: i128,
    pub state: FileState,
    /// Planned again because it changed after it was sent and verified: the object at the
    /// destination is of its older version, and is replaced (said loudly, and counted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaced: bool,
    /// Planned again because it changed after the store held bytes of it (a verified
    /// object, or parts of an upload then aborted): its bytes below this offset count as
    /// re-sent when they go again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub again_below: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileState {
    Pending,
    Uploading {
        upload: String,
        part_size: u64,
        /// By part index; `null` for a part not acknowledged yet (parts go concurrently and
        /// are acknowledged out of order).
        parts: Vec<Option<PartEntry>>,
    },
    Done {
        /// What the store said the object's ETag is (none from a directory).
        #[serde(default)]
        etag: Option<String>,
        md5: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartEntry {
    /// MD5 (hex) of the part as read and sent; the store's ETag for it matched.
    pub md5: String,
    /// The store's token for completing the upload.
    pub token: String,
}

/// `in_flight` as a list, or as the single object an older journal holds.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<InFlight>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(InFlight),
        Many(Vec<InFlight>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(f)) => vec![f],
        Some(OneOrMany::Many(v)) => v,
    })
}

impl Journal {
    /// Reads `path`, or a new journal for `dest` if there is none. A journal for another
    /// destination is an error (it would mark traces done that never went there).
    pub fn load(path: &Path, dest: &str) -> Result<Journal, OffloadError> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Journal {
                    version: VERSION,
                    dest: dest.to_string(),
                    ..Journal::default()
                })
            }
            Err(e) => {
                return Err(OffloadError::JournalRead {
                    path: path.to_path_buf(),
                    detail: e.to_string(),
                })
            }
        };
        let j: Journal = serde_json::from_slice(&text).map_err(|e| OffloadError::JournalRead {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        if j.version != VERSION {
            return Err(OffloadError::JournalRead {
                path: path.to_path_buf(),
                detail: format!("version {} (this roverlog reads {VERSION})", j.version),
            });
        }
        if j.dest != dest {
            return Err(OffloadError::JournalDest {
                path: path.to_path_buf(),
                journal: j.dest,
                dest: dest.to_string(),
            });
        }
        Ok(j)
    }

    /// Writes the journal durably (temporary file, fsync, rename, fsync of the directory).
    pub fn save(&self, path: &Path) -> Result<(), OffloadError> {
        let fail = |e: roverlog_core::error::Error| OffloadError::JournalWrite {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_dir_all_durable(dir).map_err(fail)?;
        }
        let text = serde_json::to_vec_pretty(self).expect("the journal is JSON");
        write_file_atomic(path, &text).map_err(fail)
    }
}

/// Takes the journal's lock (`<journal>.lock` beside it, an exclusive `flock` held while the
/// returned file is open): two jobs on one journal (a `roverlog offload` and a daemon's
/// `offload`) would each overwrite what the other wrote. A second one is refused, naming it.
pub fn lock(path: &Path) -> Result<std::fs::File, OffloadError> {
    use std::os::fd::AsRawFd;
    let lock = path.with_extension("lock");
    let fail = |detail: String| OffloadError::JournalWrite {
        path: lock.clone(),
        detail,
    };
    if let Some(dir) = lock.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir_all_durable(dir).map_err(|e| fail(e.to_string()))?;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .map_err(|e| fail(e.to_string()))?;
    // SAFETY: flock on a descriptor we own; released when `f` closes.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(OffloadError::JournalBusy {
                path: path.to_path_buf(),
            });
        }
        return Err(fail(e.to_string()));
    }
    Ok(f)
}

/// The default journal for `dest` when offloading `data`: under `<data>/_roverlog/offload/`,
/// or beside `data` when it is itself a trace (whose `_roverlog/` is uploaded with it).
pub fn default_path(data: &Path, dest: &str) -> PathBuf {
    let base = if roverlog_core::format::is_trace(data) {
        data.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        data.to_path_buf()
    };
    let hash = roverlog_store::md5_hex(dest.as_bytes());
    base.join("_roverlog")
        .join("offload")
        .join(format!("{}.json", &hash[..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal written when parts went one at a time (one `in_flight` object, every part
    /// acknowledged in order) reads as the list form, and writes back as a list.
    #[test]
    fn a_journal_of_one_part_in_flight_still_reads() {
        let old = r#"{"version":1,"dest":"s3://b","sent":10,
            "in_flight":{"trace":"t","file":"f","part":2,"bytes":5},
            "traces":{"t":{"files":[{"path":"f","size":15,"mtime_ns":1,
                "state":{"state":"uploading","upload":"u","part_size":5,
                         "parts":[{"md5":"a","token":"x"},{"md5":"b","token":"y"}]}}]}}}"#;
        let j: Journal = serde_json::from_str(old).unwrap();
        assert_eq!(j.in_flight.len(), 1);
        assert_eq!(j.in_flight[0].part, 2);
        let FileState::Uploading { parts, .. } = &j.traces["t"].files[0].state else {
            panic!("uploading");
        };
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].as_ref().unwrap().md5, "b");
        let again: Journal = serde_json::from_slice(&serde_json::to_vec(&j).unwrap()).unwrap();
        assert_eq!(again.in_flight, j.in_flight);
        let none: Journal =
            serde_json::from_str(r#"{"version":1,"dest":"d","traces":{}}"#).unwrap();
        assert!(none.in_flight.is_empty());
        // The fields a re-plan adds read as absent, and are not written while unused: a
        // journal with nothing changed is what an older roverlog wrote and reads.
        let t = &j.traces["t"];
        assert!(t.changed.is_empty());
        assert!(!t.files[0].replaced && t.files[0].again_below == 0);
        let text = String::from_utf8(serde_json::to_vec(&j).unwrap()).unwrap();
        for key in ["changed", "replaced", "again_below"] {
            // (`changed` also covers `changed_since_verified`.)
            assert!(!text.contains(key), "{key} in {text}");
        }
    }
}
