//! The offload's errors, each naming the file, object, trace or journal involved.

use std::path::PathBuf;

use roverlog_store::{OpenError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{}: not a directory", path.display())]
    NoData { path: PathBuf },
    #[error("finding traces: {0}")]
    Find(roverlog_core::error::Error),
    #[error("{}: sending it to {key}: {error}; not marked done", path.display())]
    Send {
        path: PathBuf,
        key: String,
        error: Box<StoreError>,
    },
    #[error("{}: reading: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: changed during the upload: {what}; not marked done, nothing deleted: the next run plans its trace again and sends what changed", path.display())]
    Changed { path: PathBuf, what: String },
    #[error("{}: the object {key} does not match: {what}: expected {expected}, got {got}; not marked done", path.display())]
    Mismatch {
        path: PathBuf,
        key: String,
        what: String,
        expected: String,
        got: String,
    },
    #[error("{}: the store no longer knows the upload of {key} (expired or aborted); the next run sends the file again", path.display())]
    UploadLost { path: PathBuf, key: String },
    #[error("{}: the journal cannot be read: {detail} (move it away to start over)", path.display())]
    JournalRead { path: PathBuf, detail: String },
    #[error("{}: the journal cannot be written: {detail}", path.display())]
    JournalWrite { path: PathBuf, detail: String },
    #[error("{}: this journal is for {journal:?}, not {dest:?} (give each destination its own --journal)", path.display())]
    JournalDest {
        path: PathBuf,
        journal: String,
        dest: String,
    },
    #[error("{}: its files changed since it was verified ({what}): not deleted; the next run checks them against the destination again and sends what changed", path.display())]
    ChangedSinceVerified { path: PathBuf, what: String },
    #[error("{}: deleting: {error}", path.display())]
    Delete {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: another offload is using this journal (a `roverlog offload`, or a daemon's config `offload`, to the same destination); run one at a time", path.display())]
    JournalBusy { path: PathBuf },
    #[error("stopped before the job was done (the journal keeps what was done)")]
    Stopped,
    #[error("{}: free space: {error}", path.display())]
    Statvfs {
        path: PathBuf,
        error: std::io::Error,
    },
}
