//! A trace read where it lies: a [`Store`] opened at the trace (`s3://bucket/prefix/trace`,
//! or a directory) behind `roverlog-core`'s range-read seam ([`TraceFiles`]), so the core's
//! in-place readers ([`RemoteTrace`]) read it by byte ranges: one `GET` per sample once a
//! channel is open.

use std::ops::Range;
use std::sync::Arc;

use roverlog_core::remote::{BackendError, RangeFile, RemoteError, RemoteTrace, TraceFiles};

use crate::{OpenError, Store, StoreError};

/// The file upstream discovers traces by, and the one every sensor holds.
const CONFIG_FILE: &str = roverlog_core::format::trace::CONFIG_FILE;
const META_FILE: &str = roverlog_core::format::meta::META_FILE;

/// A store opened at a trace, as the core's readers see it.
pub struct StoreFiles {
    store: Arc<Store>,
}

impl StoreFiles {
    pub fn new(store: Arc<Store>) -> StoreFiles {
        StoreFiles { store }
    }
}

struct StoreFile {
    store: Arc<Store>,
    key: String,
    len: u64,
}

impl RangeFile for StoreFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_range(&self, range: Range<u64>) -> Result<Vec<u8>, BackendError> {
        Ok(self.store.get_range(&self.key, range)?)
    }
}

impl TraceFiles for StoreFiles {
    fn location(&self) -> String {
        self.store.url()
    }

    fn describe(&self) -> String {
        self.store.describe()
    }

    fn list(&self) -> Result<Vec<(String, u64)>, BackendError> {
        Ok(self.store.list()?)
    }

    fn open(&self, path: &str, len: u64) -> Result<Box<dyn RangeFile>, BackendError> {
        Ok(Box::new(StoreFile {
            store: self.store.clone(),
            key: path.to_string(),
            len,
        }))
    }
}

/// Why a trace could not be opened in place.
#[derive(Debug, thiserror::Error)]
pub enum TraceOpenError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Read(#[from] RemoteError),
}

/// Opens the trace at `url` (`s3://bucket/prefix/trace`, the store's settings from the
/// `AWS_*` variables; or a directory) for reading in place: one listing request. The store
/// handle is returned too, for its request counts ([`Store::requests`]).
pub fn open_trace(url: &str) -> Result<(RemoteTrace, Arc<Store>), TraceOpenError> {
    let store = Arc::new(Store::open(url.trim_end_matches('/'))?);
    let trace = RemoteTrace::open(Arc::new(StoreFiles::new(store.clone())))?;
    Ok((trace, store))
}

/// Opens the trace `store` was opened at (its prefix, or its directory) for reading in place.
pub fn open_trace_in(store: Arc<Store>) -> Result<RemoteTrace, RemoteError> {
    RemoteTrace::open(Arc::new(StoreFiles::new(store)))
}

/// The traces at or below the store's prefix (or directory): directories holding
/// `config.yaml` or a sensor's `meta.json`, a trace's own sub-directories not searched, as
/// paths relative to the prefix (`""`: the prefix is a trace), sorted. One listing.
pub fn find_traces(store: &Store) -> Result<Vec<String>, StoreError> {
    let mut dirs = std::collections::BTreeSet::new();
    for (k, _) in store.list()? {
        let parts: Vec<&str> = k.split('/').collect();
        if parts.last() == Some(&CONFIG_FILE) {
            dirs.insert(parts[..parts.len() - 1].join("/"));
        } else if parts.len() >= 2 && parts.last() == Some(&META_FILE) {
            dirs.insert(parts[..parts.len() - 2].join("/"));
        }
    }
    let mut out: Vec<String> = Vec::new();
    for d in dirs {
        let nested = out
            .iter()
            .any(|t| t.is_empty() || d.starts_with(&format!("{t}/")));
        if !nested {
            out.push(d);
        }
    }
    Ok(out)
}
