//! The store's errors, each naming the store (bucket and endpoint, or directory) and the key.

use std::path::PathBuf;

/// Why a destination could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{dest}: not an S3 URL (expected s3://bucket or s3://bucket/prefix)")]
    BadUrl { dest: String },
    #[error("s3://{bucket}: {source}")]
    S3Config {
        bucket: String,
        #[source]
        source: Box<object_store::Error>,
    },
    #[error("{}: no such directory (a destination directory must exist: is the NAS mounted?)", path.display())]
    NoDirectory { path: PathBuf },
    #[error("the async runtime for the store could not start: {0}")]
    Runtime(#[source] std::io::Error),
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
    #[error("{store}: no unfinished upload {upload} of {key}")]
    NoSuchUpload {
        store: String,
        key: String,
        upload: String,
    },
    #[error("{store}: {op} {key}: {source}")]
    Request {
        store: String,
        op: &'static str,
        key: String,
        #[source]
        source: Box<object_store::Error>,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
