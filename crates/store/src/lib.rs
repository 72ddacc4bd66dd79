//! Where traces go (and, later, are read from): an S3-compatible bucket or a directory (a NAS
//! mount), behind one small blocking interface keyed by `/`-separated object keys.
//!
//! - [`Store::open`] takes `s3://bucket/prefix` (endpoint, region and credentials from the
//!   standard `AWS_*` variables, see [`s3`]) or a directory path.
//! - Whole objects: [`Store::put`]; large ones in parts: [`Store::create_upload`],
//!   [`Store::put_part`], [`Store::complete_upload`], [`Store::abort_upload`]. An [`UploadId`]
//!   and every [`PartTag`] are plain strings a caller can journal and hand back after a
//!   restart, so an upload continues in another process.
//! - Reading: [`Store::head`] (size and ETag), [`Store::list`] and [`Store::get_range`] (a
//!   byte range); [`Store::requests`] counts the requests a store handle made.
//! - [`files`]: a trace opened where it lies ([`open_trace`]): the store behind
//!   `roverlog-core`'s range-read seam ([`roverlog_core::remote`]).
//!
//! Each part's ETag is the MD5 of the bytes the store received (S3's rule for unencrypted
//! objects, which Garage and the directory store follow), and a multipart object's ETag is
//! [`multipart_etag`] of its parts: a caller that hashed what it sent can check both.

mod dir;
mod error;
pub mod files;
pub mod s3;

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub use error::{OpenError, StoreError};
pub use files::{find_traces, open_trace, open_trace_in, StoreFiles, TraceOpenError};

/// A store's handle on an unfinished multipart upload (S3's upload id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadId(pub String);

/// What the store answered for one part (for S3, its ETag and checksum as `object_store`
/// keeps them); handed back unchanged to [`Store::complete_upload`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartTag {
    /// The part's ETag: the MD5 (hex) of the bytes the store received.
    pub etag: String,
    /// The store's own token for completing the upload.
    pub token: String,
}

/// An object's size and ETag (the directory store has no ETag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub size: u64,
    pub etag: Option<String>,
}

/// The ETag S3 gives an object uploaded in parts: the MD5 of the parts' MD5s (binary,
/// concatenated), then `-` and the number of parts.
pub fn multipart_etag<'a>(part_md5s: impl IntoIterator<Item = &'a str>) -> String {
    use md5::Digest;
    let mut h = md5::Md5::new();
    let mut n = 0;
    for hex in part_md5s {
        h.update(from_hex(hex));
        n += 1;
    }
    format!("{}-{n}", to_hex(&h.finalize()))
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// MD5 (hex) of `data`.
pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest;
    to_hex(&md5::Md5::digest(data))
}

enum Backend {
    Dir(dir::DirStore),
    S3(s3::S3Store),
}

/// Requests a store handle made (each counted when it was sent, answered or not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Range reads ([`Store::get_range`]): S3 `GET`s.
    pub gets: u64,
    /// Bytes those reads returned.
    pub got_bytes: u64,
    /// [`Store::head`] calls.
    pub heads: u64,
    /// [`Store::list`] and [`Store::check`] calls (S3 pages a listing per 1000 keys).
    pub lists: u64,
}

#[derive(Default)]
struct Counters {
    gets: AtomicU64,
    got_bytes: AtomicU64,
    heads: AtomicU64,
    lists: AtomicU64,
}

/// A destination opened for writing and reading objects.
pub struct Store {
    backend: Backend,
    counters: Counters,
}

impl Store {
    /// `s3://bucket[/prefix]` or a directory (which must exist: a NAS that is not mounted
    /// must not be filled on the vehicle's own disk).
    pub fn open(dest: &str) -> Result<Store, OpenError> {
        let env: Vec<(String, String)> = std::env::vars().collect();
        Store::open_env(dest, &env)
    }

    /// [`Store::open`] with these `AWS_*` variables instead of the process's.
    pub fn open_env(dest: &str, env: &[(String, String)]) -> Result<Store, OpenError> {
        let backend = if let Some(rest) = dest.strip_prefix("s3://") {
            Backend::S3(s3::S3Store::open(rest, env)?)
        } else {
            Backend::Dir(dir::DirStore::open(PathBuf::from(dest))?)
        };
        Ok(Store {
            backend,
            counters: Counters::default(),
        })
    }

    /// Where this store is, for messages: `s3://bucket/prefix at http://host:port`, or the
    /// directory.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Dir(d) => d.root().display().to_string(),
            Backend::S3(s) => s.describe(),
        }
    }

    /// Where this store is, as a URL or path (`s3://bucket/prefix`, or the directory).
    pub fn url(&self) -> String {
        match &self.backend {
            Backend::Dir(d) => d.root().display().to_string(),
            Backend::S3(s) => s.url(),
        }
    }

    /// Whether the store checked each part's content on receipt (S3 with
    /// `x-amz-checksum-sha256`): if not, a caller verifies by reading the object back.
    pub fn verifies_on_receipt(&self) -> bool {
        matches!(self.backend, Backend::S3(_))
    }

    /// Fails early, naming what is wrong, when the store cannot be written: a bucket that
    /// does not exist, credentials it refuses, an endpoint that does not answer, a
    /// directory that is not one.
    pub fn check(&self) -> Result<(), StoreError> {
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        match &self.backend {
            Backend::Dir(d) => d.check(),
            Backend::S3(s) => s.check(),
        }
    }

    /// Writes a whole object.
    pub fn put(&self, key: &str, data: Vec<u8>) -> Result<ObjectInfo, StoreError> {
        match &self.backend {
            Backend::Dir(d) => d.put(key, &data),
            Backend::S3(s) => s.put(key, data),
        }
    }

    /// Starts an upload in parts of `key`.
    pub fn create_upload(&self, key: &str) -> Result<UploadId, StoreError> {
        match &self.backend {
            Backend::Dir(d) => d.create_upload(key),
            Backend::S3(s) => s.create_upload(key),
        }
    }

    /// Sends part `index` (from 0), which starts at byte `offset` of the object. Sending the
    /// same part again replaces it.
    pub fn put_part(
        &self,
        key: &str,
        upload: &UploadId,
        index: usize,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<PartTag, StoreError> {
        match &self.backend {
            Backend::Dir(d) => d.put_part(key, upload, offset, &data),
            Backend::S3(s) => s.put_part(key, upload, index, data),
        }
    }

    /// Makes the object from its parts, in order. `Err(StoreError::NoSuchUpload)` when the
    /// store no longer knows the upload (completed before a crash, or aborted).
    pub fn complete_upload(
        &self,
        key: &str,
        upload: &UploadId,
        parts: &[PartTag],
    ) -> Result<ObjectInfo, StoreError> {
        match &self.backend {
            Backend::Dir(d) => d.complete_upload(key, upload, parts),
            Backend::S3(s) => s.complete_upload(key, upload, parts),
        }
    }

    /// Drops an unfinished upload and its parts.
    pub fn abort_upload(&self, key: &str, upload: &UploadId) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Dir(d) => d.abort_upload(upload),
            Backend::S3(s) => s.abort_upload(key, upload),
        }
    }

    /// The object's size and ETag, or `None` when there is no such object.
    pub fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        self.counters.heads.fetch_add(1, Ordering::Relaxed);
        match &self.backend {
            Backend::Dir(d) => d.head(key),
            Backend::S3(s) => s.head(key),
        }
    }

    /// Bytes `range` of the object.
    pub fn get_range(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        let got = match &self.backend {
            Backend::Dir(d) => d.get_range(key, range),
            Backend::S3(s) => s.get_range(key, range),
        }?;
        let n = got.len() as u64;
        self.counters.got_bytes.fetch_add(n, Ordering::Relaxed);
        Ok(got)
    }

    /// Every object below the store's prefix (or directory): key and size, sorted.
    pub fn list(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.counters.lists.fetch_add(1, Ordering::Relaxed);
        match &self.backend {
            Backend::Dir(d) => d.list(),
            Backend::S3(s) => s.list(),
        }
    }

    /// The requests this handle made so far.
    pub fn requests(&self) -> Requests {
        let c = &self.counters;
        Requests {
            gets: c.gets.load(Ordering::Relaxed),
            got_bytes: c.got_bytes.load(Ordering::Relaxed),
            heads: c.heads.load(Ordering::Relaxed),
            lists: c.lists.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests;
