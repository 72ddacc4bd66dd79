//! One file to the store: whole when it fits in a part, else in parts, each journalled as
//! the store acknowledges it; then checked against what was read from the local file.
//!
//! What is checked, for every object:
//! - each part's (or whole object's) ETag, the MD5 of what the store received, equals the MD5
//!   of what was read (and S3 checked each body's `x-amz-checksum-sha256` on receipt);
//! - after completion, the object's size, and its ETag (S3: the MD5 of the parts' MD5s) or,
//!   from a directory, the MD5 of the object read back, equal the local file's;
//! - the local file's size and mtime are those it had when the trace was planned, and on
//!   resuming, the parts already sent still read the same: otherwise the file changed during
//!   the upload, an error naming it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use md5::Digest;
use roverlog_store::{md5_hex, multipart_etag, to_hex, PartTag, StoreError, UploadId};

use crate::journal::{FileEntry, FileState, InFlight, PartEntry};
use crate::{Job, OffloadError};

/// Parts of at least this size (S3's minimum is 5 MiB), more for a file that would need
/// more than [`MAX_PARTS`].
pub const PART_SIZE: u64 = 8 << 20;
/// S3 allows 10,000 parts; this leaves room.
pub const MAX_PARTS: u64 = 9_000;

/// The part size for a file of `size` bytes.
pub fn part_size(min: u64, size: u64) -> u64 {
    min.max(size.div_ceil(MAX_PARTS))
}

/// The local file's size and mtime (ns).
pub fn stat(path: &Path) -> Result<(u64, i128), OffloadError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).map_err(|e| OffloadError::Read {
        path: path.to_path_buf(),
        error: e,
    })?;
    Ok((
        m.len(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    ))
}

fn read_at(f: &File, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>, OffloadError> {
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            OffloadError::Changed {
                path: path.to_path_buf(),
                what: format!("shorter than the {} bytes it had", offset + len),
            }
        } else {
            OffloadError::Read {
                path: path.to_path_buf(),
                error: e,
            }
        }
    })?;
    Ok(buf)
}

/// An error of the store while sending `path` to `key`, naming both.
fn sending<'a>(path: &'a Path, key: &'a str) -> impl FnOnce(StoreError) -> OffloadError + 'a {
    move |error| OffloadError::Send {
        path: path.to_path_buf(),
        key: key.to_string(),
        error: Box::new(error),
    }
}

/// Checks the local file still has the size and mtime it was planned with.
pub fn check_unchanged(path: &Path, entry: &FileEntry) -> Result<(), OffloadError> {
    let (size, mtime) = stat(path)?;
    if size != entry.size || mtime != entry.mtime_ns {
        return Err(OffloadError::Changed {
            path: path.to_path_buf(),
            what: format!(
                "size {} mtime {} ns when planned, now size {size} mtime {mtime} ns",
                entry.size, entry.mtime_ns
            ),
        });
    }
    Ok(())
}

impl Job<'_> {
    fn entry(&mut self, trace: &str, i: usize) -> &mut FileEntry {
        &mut self
            .journal
            .traces
            .get_mut(trace)
            .expect("planned trace")
            .files[i]
    }

    /// Books `bytes` of part `part` of `file` as in flight (written with the next save);
    /// returns how many of them are sent again (the same part was in flight when the last
    /// run ended).
    fn in_flight(&mut self, trace: &str, file: &str, part: usize, bytes: u64) -> u64 {
        let now = InFlight {
            trace: trace.to_string(),
            file: file.to_string(),
            part,
            bytes,
        };
        let again = self.was_in_flight.as_ref() == Some(&now);
        if again {
            self.was_in_flight = None;
        }
        self.journal.in_flight = Some(now);
        self.journal.sent += bytes;
        if again {
            bytes
        } else {
            0
        }
    }

    /// Waits for the rate cap before a part of `n` bytes; a stop asked meanwhile ends the
    /// job (the part, booked in flight, is counted as re-sent by the next run).
    fn pace(&mut self, n: u64) -> Result<(), OffloadError> {
        let progress = self.progress;
        if progress.stopped() {
            return Err(OffloadError::Stopped);
        }
        if let Some(p) = &mut self.pacer {
            if !p.wait(n, || progress.stopped()) {
                return Err(OffloadError::Stopped);
            }
        }
        Ok(())
    }

    fn sent(&mut self, n: u64, again: u64) {
        self.summary.bytes_sent += n;
        self.summary.bytes_resent += again;
        self.progress.sent(n);
    }

    /// Sends file `i` of `trace` (at `dir`) and verifies it; the journal then says `done`.
    pub(crate) fn send_file(
        &mut self,
        trace: &str,
        dir: &Path,
        i: usize,
    ) -> Result<(), OffloadError> {
        let entry = self.entry(trace, i).clone();
        let path = dir.join(&entry.path);
        let key = format!("{trace}/{}", entry.path);
        check_unchanged(&path, &entry)?;
        let f = File::open(&path).map_err(|e| OffloadError::Read {
            path: path.clone(),
            error: e,
        })?;
        let (etag, md5) = if entry.size <= self.part_size {
            self.send_whole(trace, &entry, &f, &path, &key)?
        } else {
            self.send_parts(trace, i, &f, &path, &key)?
        };
        check_unchanged(&path, &entry)?;
        self.verify(&key, &path, entry.size, etag.as_deref(), &md5)?;
        self.entry(trace, i).state = FileState::Done { etag, md5 };
        self.journal.in_flight = None;
        self.save()?;
        self.summary.files += 1;
        Ok(())
    }

    fn send_whole(
        &mut self,
        trace: &str,
        entry: &FileEntry,
        f: &File,
        path: &Path,
        key: &str,
    ) -> Result<(Option<String>, String), OffloadError> {
        let data = read_at(f, path, 0, entry.size)?;
        let md5 = md5_hex(&data);
        let again = self.in_flight(trace, &entry.path, 0, entry.size);
        self.save()?;
        self.pace(entry.size)?;
        let data = crate::knobs::corrupt(key, 0, data);
        let info = self.store.put(key, data).map_err(sending(path, key))?;
        self.sent(entry.size, again);
        if let Some(etag) = &info.etag {
            if *etag != md5 {
                return Err(OffloadError::Mismatch {
                    path: path.to_path_buf(),
                    key: key.to_string(),
                    what: "the store received other bytes (ETag against the MD5 of what was read)"
                        .into(),
                    expected: md5,
                    got: etag.clone(),
                });
            }
        }
        Ok((info.etag, md5))
    }

    fn send_parts(
        &mut self,
        trace: &str,
        i: usize,
        f: &File,
        path: &Path,
        key: &str,
    ) -> Result<(Option<String>, String), OffloadError> {
        let entry = self.entry(trace, i).clone();
        let (upload, part_size, mut parts) = match entry.state {
            FileState::Uploading {
                upload,
                part_size,
                parts,
            } => (UploadId(upload), part_size, parts),
            _ => {
                let upload = self.store.create_upload(key).map_err(sending(path, key))?;
                let part_size = part_size(self.part_size, entry.size);
                self.entry(trace, i).state = FileState::Uploading {
                    upload: upload.0.clone(),
                    part_size,
                    parts: Vec::new(),
                };
                self.save()?;
                (upload, part_size, Vec::new())
            }
        };
        // The parts already sent must still read the same; they feed the file's MD5.
        let mut whole = md5::Md5::new();
        for (k, p) in parts.iter().enumerate() {
            let off = k as u64 * part_size;
            let data = read_at(f, path, off, part_size.min(entry.size - off))?;
            if md5_hex(&data) != p.md5 {
                return Err(OffloadError::Changed {
                    path: path.to_path_buf(),
                    what: format!("part {} (bytes {off}..) differs from what was sent", k + 1),
                });
            }
            whole.update(&data);
        }
        let count = entry.size.div_ceil(part_size) as usize;
        for k in parts.len()..count {
            let off = k as u64 * part_size;
            let n = part_size.min(entry.size - off);
            let data = read_at(f, path, off, n)?;
            let md5 = md5_hex(&data);
            whole.update(&data);
            let again = self.in_flight(trace, &entry.path, k, n);
            self.save()?;
            self.pace(n)?;
            let data = crate::knobs::corrupt(key, k, data);
            let tag = match self.store.put_part(key, &upload, k, off, data) {
                Err(StoreError::NoSuchUpload { .. }) => {
                    // The store dropped the upload (expired, aborted): start the file again.
                    self.entry(trace, i).state = FileState::Pending;
                    self.save()?;
                    return Err(OffloadError::UploadLost {
                        path: path.to_path_buf(),
                        key: key.to_string(),
                    });
                }
                r => r.map_err(sending(path, key))?,
            };
            self.sent(n, again);
            if tag.etag != md5 {
                return Err(OffloadError::Mismatch {
                    path: path.to_path_buf(),
                    key: key.to_string(),
                    what: format!("part {}: the store received other bytes (its ETag against the MD5 of what was read)", k + 1),
                    expected: md5,
                    got: tag.etag,
                });
            }
            parts.push(PartEntry {
                md5,
                token: tag.token,
            });
            if let FileState::Uploading { parts: p, .. } = &mut self.entry(trace, i).state {
                p.push(parts.last().expect("pushed").clone());
            }
            self.save()?;
        }
        let md5 = to_hex(&whole.finalize());
        let expected = multipart_etag(parts.iter().map(|p| p.md5.as_str()));
        let tags: Vec<PartTag> = parts
            .iter()
            .map(|p| PartTag {
                etag: p.md5.clone(),
                token: p.token.clone(),
            })
            .collect();
        let etag = match self.store.complete_upload(key, &upload, &tags) {
            Ok(info) => info.etag,
            // Completed before the last run ended, or gone: what is there is checked below.
            Err(StoreError::NoSuchUpload { .. }) => self.store.head(key)?.and_then(|h| h.etag),
            Err(e) => return Err(sending(path, key)(e)),
        };
        if self.store.verifies_on_receipt() && etag.as_deref() != Some(expected.as_str()) {
            return Err(OffloadError::Mismatch {
                path: path.to_path_buf(),
                key: key.to_string(),
                what: "the completed object is not the parts sent (ETag)".into(),
                expected,
                got: etag.unwrap_or_else(|| "no object".into()),
            });
        }
        Ok((etag, md5))
    }

    /// Checks the object at `key` against the local file: size, and the ETag the store
    /// computed on receipt (S3) or the MD5 of the object read back (a directory).
    pub(crate) fn verify(
        &mut self,
        key: &str,
        path: &Path,
        size: u64,
        etag: Option<&str>,
        md5: &str,
    ) -> Result<(), OffloadError> {
        let mismatch = |what: &str, expected: String, got: String| OffloadError::Mismatch {
            path: path.to_path_buf(),
            key: key.to_string(),
            what: what.to_string(),
            expected,
            got,
        };
        let Some(info) = self.store.head(key)? else {
            return Err(mismatch("object", "present".into(), "missing".into()));
        };
        if info.size != size {
            return Err(mismatch("size", size.to_string(), info.size.to_string()));
        }
        if self.store.verifies_on_receipt() {
            if info.etag.as_deref() != etag {
                return Err(mismatch(
                    "ETag",
                    etag.unwrap_or("").to_string(),
                    info.etag.unwrap_or_default(),
                ));
            }
        } else {
            let mut h = md5::Md5::new();
            let mut off = 0;
            while off < size {
                let n = (size - off).min(PART_SIZE);
                h.update(self.store.get_range(key, off..off + n)?);
                off += n;
            }
            let got = to_hex(&h.finalize());
            if got != md5 {
                return Err(mismatch("MD5 read back", md5.to_string(), got));
            }
        }
        Ok(())
    }
}
