//! The store's errors, each naming the store (bucket and endpoint, or directory) and the key.
//! As in roverlog-core, an underlying error is part of the message, not a `source` (the
//! binary prints the chain, which would print it twice).

use std::path::PathBuf;

/// Why a destination could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{dest}: not an S3 URL (expected s3://bucket or s3://bucket/prefix)")]
    BadUrl { dest: String },
    #[error("s3://{bucket}: {error}")]
    S3Config {
        bucket: String,
        error: Box<object_store::Error>,
    },
    #[error("{}: no such directory (a destination directory must exist: is the NAS mounted?)", path.display())]
    NoDirectory { path: PathBuf },
    #[error("the async runtime for the store could not start: {0}")]
    Runtime(std::io::Error),
}

/// Why an operation on a store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("bucket {bucket:?} does not exist at {endpoint}")]
    NoSuchBucket { bucket: String, endpoint: String },
    #[error("{endpoint} refused the credentials for bucket {bucket:?} (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY): {detail}")]
    Refused {
        bucket: String,
        endpoint: String,
        detail: String,
    },
    #[error("{endpoint} (bucket {bucket:?}) did not answer: {detail}")]
    Unreachable {
        bucket: String,
        endpoint: String,
        detail: String,
    },
    #[error("bucket {bucket:?} at {endpoint} is full (its quota, or the store's space, is used up; free or raise it, then run again): {detail}")]
    Full {
        bucket: String,
        endpoint: String,
        detail: String,
    },
    #[error("{store}: no unfinished upload {upload} of {key}")]
    NoSuchUpload {
        store: String,
        key: String,
        upload: String,
    },
    #[error("{store}: {op} {key}: {error}")]
    Request {
        store: String,
        op: &'static str,
        key: String,
        error: Box<object_store::Error>,
    },
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}
