//! [`RemoteChannel`]: one channel read in place, sample by sample.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::avi::RemoteAvi;
use super::fetch::read_whole;
use super::{FrameDamage, RangeFile, RemoteError, TraceFiles};
use crate::format::blob::sample_name;
use crate::format::lzmaf::{parse_index, reader_frames};
use crate::format::meta::{ChannelFormat, ChannelMeta};
use crate::format::{bounds, lzma};

/// The most bytes of an `lzmaf` index read on open (8 a frame: 4 M frames, 39 hours at 30 Hz).
pub const MAX_INDEX_BYTES: u64 = 32 << 20;
/// The most bytes of a whole-file `lzma` channel fetched to be decoded.
pub const MAX_LZMA_BYTES: u64 = 1 << 30;
/// About the most bytes one request of [`RemoteChannel::get_range`] fetches when reading a
/// channel through ([`RemoteChannel::batch_len`]): few requests for small samples (an IMU's
/// 24 bytes), little memory for each thread's batch.
pub const BATCH_BYTES: u64 = 256 << 10;

enum Kind {
    /// Sample `k` is bytes `k * size .. (k + 1) * size`.
    Raw {
        file: Box<dyn RangeFile>,
    },
    /// Frame `k` is bytes `index[k] .. index[k + 1]` of the data.
    Lzmaf {
        file: Box<dyn RangeFile>,
        index: Vec<u64>,
    },
    /// Fetched and decoded whole on the first read.
    Lzma {
        file: Box<dyn RangeFile>,
        whole: Mutex<Option<Arc<Vec<u8>>>>,
    },
    /// Sample `k` is the file `<channel>/<k:06>.<ext>`.
    Blob {
        files: Arc<dyn TraceFiles>,
        sizes: Arc<BTreeMap<String, u64>>,
        ext: String,
    },
    Mjpg(RemoteAvi),
}

/// A channel opened in place.
pub struct RemoteChannel {
    /// `<location>/<sensor>/<channel>`, for messages.
    file: String,
    /// `<sensor>/<channel>`, relative to the trace.
    path: String,
    sample_bytes: usize,
    len: u64,
    /// The sensor's `ts` count (`None` for `ts` itself).
    expected: Option<u64>,
    kind: Kind,
}

impl RemoteChannel {
    pub(super) fn open(
        files: Arc<dyn TraceFiles>,
        sizes: &Arc<BTreeMap<String, u64>>,
        path: &str,
        meta: &ChannelMeta,
        expected: Option<u64>,
    ) -> Result<RemoteChannel, RemoteError> {
        let file = format!("{}/{path}", files.location());
        let backend = |error| RemoteError::Backend {
            location: file.clone(),
            error,
        };
        let open = |p: &str| -> Result<Box<dyn RangeFile>, RemoteError> {
            let len = sizes.get(p).copied().unwrap_or(0);
            if !sizes.contains_key(p) {
                return Err(RemoteError::Backend {
                    location: format!("{}/{p}", files.location()),
                    error: "no such file".into(),
                });
            }
            files.open(p, len).map_err(|error| RemoteError::Backend {
                location: format!("{}/{p}", files.location()),
                error,
            })
        };
        let s = meta.sample_bytes();
        let (kind, intact) = match &meta.format {
            ChannelFormat::Raw => {
                let f = open(path)?;
                let n = if s == 0 { 0 } else { f.len() / s as u64 };
                (Kind::Raw { file: f }, n)
            }
            ChannelFormat::Lzmaf => {
                let ipath = format!("{path}_i");
                let ibytes = if sizes.contains_key(&ipath) {
                    read_whole(&*files, sizes, &ipath, MAX_INDEX_BYTES, "lzmaf index")?
                } else {
                    Vec::new()
                };
                let data = if sizes.contains_key(path) {
                    open(path)?
                } else {
                    Box::new(Empty)
                };
                let (intact, _) = reader_frames(&ibytes, data.len());
                let index = parse_index(&ibytes);
                (Kind::Lzmaf { file: data, index }, intact)
            }
            ChannelFormat::Lzma => {
                let f = open(path)?;
                if f.len() > MAX_LZMA_BYTES {
                    return Err(RemoteError::TooLarge {
                        file,
                        what: "whole-file lzma channel",
                        got: f.len(),
                        limit: MAX_LZMA_BYTES,
                    });
                }
                // Counted from `ts`; a sample the stream does not hold fails when read.
                let n = expected.unwrap_or(u64::MAX);
                let whole = Mutex::new(None);
                (Kind::Lzma { file: f, whole }, n)
            }
            ChannelFormat::Blob(ext) => {
                let prefix = format!("{path}/");
                let listed = sizes
                    .range(prefix.clone()..)
                    .take_while(|(p, _)| p.starts_with(&prefix))
                    .count() as u64;
                let kind = Kind::Blob {
                    files: files.clone(),
                    sizes: sizes.clone(),
                    ext: ext.clone(),
                };
                (kind, expected.unwrap_or(listed))
            }
            ChannelFormat::Mjpg => {
                let avi = RemoteAvi::open(open(path)?, &file).map_err(|e| match e {
                    super::avi::OpenFailure::Backend(error) => backend(error),
                    super::avi::OpenFailure::Other(e) => e,
                })?;
                let n = avi.count();
                (Kind::Mjpg(avi), n)
            }
            ChannelFormat::Other(f) => {
                return Err(RemoteError::UnsupportedFormat {
                    file,
                    format: f.clone(),
                })
            }
        };
        Ok(RemoteChannel {
            file,
            path: path.to_string(),
            sample_bytes: s,
            len: bounds::agreed(intact, expected),
            expected,
            kind,
        })
    }

    /// Number of samples: what the sensor's `ts` and the channel's own index agree on.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the channel holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn backend(&self, error: super::BackendError) -> RemoteError {
        RemoteError::Backend {
            location: self.file.clone(),
            error,
        }
    }

    fn damaged(&self, index: u64, damage: FrameDamage) -> RemoteError {
        RemoteError::Damaged {
            file: self.file.clone(),
            index,
            damage,
        }
    }

    /// Sample `index`: its bytes (decompressed for `lzmaf` and `lzma`; a video frame's JPEG
    /// bytes). One range request, except the first read of an `lzma` channel (the file).
    pub fn get(&self, index: u64) -> Result<Vec<u8>, RemoteError> {
        if index >= self.len && self.expected.is_some_and(|n| index < n) {
            let held = self.len;
            return Err(self.damaged(index, FrameDamage::NotHeld { held }));
        }
        if index >= self.len {
            return Err(RemoteError::PastEnd {
                file: self.file.clone(),
                index,
                len: self.len,
            });
        }
        let s = self.sample_bytes as u64;
        match &self.kind {
            Kind::Raw { file } => file
                .read_range(index * s..(index + 1) * s)
                .map_err(|e| self.backend(e)),
            Kind::Lzmaf { file, index: offs } => {
                let k = index as usize;
                let (a, b) = (offs[k], offs[k + 1]);
                if a > b || b > file.len() {
                    let data_len = file.len();
                    let damage = FrameDamage::BadIndex {
                        start: a,
                        end: b,
                        data_len,
                    };
                    return Err(self.damaged(index, damage));
                }
                let frame = file.read_range(a..b).map_err(|e| self.backend(e))?;
                self.decompress(index, &frame)
            }
            Kind::Lzma { file, whole } => {
                let whole = self.lzma_whole(&**file, whole)?;
                let at = (index * s) as usize;
                whole
                    .get(at..at + self.sample_bytes)
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| RemoteError::PastEnd {
                        file: self.file.clone(),
                        index,
                        len: whole.len() as u64 / s.max(1),
                    })
            }
            Kind::Blob { files, sizes, ext } => {
                let name = sample_name(index, ext);
                let p = format!("{}/{name}", self.path);
                let Some(&len) = sizes.get(&p) else {
                    return Err(self.damaged(index, FrameDamage::MissingFile { name }));
                };
                let f = files.open(&p, len).map_err(|e| self.backend(e))?;
                if len == 0 {
                    return Ok(Vec::new());
                }
                f.read_range(0..len).map_err(|e| self.backend(e))
            }
            Kind::Mjpg(avi) => avi.frame(index).map_err(|e| match e {
                super::avi::FrameFailure::Backend(e) => self.backend(e),
                super::avi::FrameFailure::Damaged(d) => self.damaged(index, d),
            }),
        }
    }

    /// How many samples one [`RemoteChannel::get_range`] should ask for when every sample
    /// is read: `raw` samples and `lzmaf` frames filling about `BATCH_BYTES` (decoded: a
    /// batch's memory is bounded however well its frames compress), at least one; one for
    /// the rest (a video frame, a blob's file: a request each anyway; `lzma`: fetched whole
    /// once).
    pub fn batch_len(&self) -> u64 {
        match &self.kind {
            Kind::Raw { .. } | Kind::Lzmaf { .. } => {
                (BATCH_BYTES / (self.sample_bytes as u64).max(1)).max(1)
            }
            _ => 1,
        }
    }

    /// Samples `range`, as [`RemoteChannel::get`] gives each: `raw` samples and `lzmaf`
    /// frames in one range request, the rest one by one. The first sample that does not
    /// read is the error, as `get` names it.
    pub fn get_range(&self, range: Range<u64>) -> Result<Vec<Vec<u8>>, RemoteError> {
        let whole = range.start.min(self.len)..range.end.min(self.len);
        let mut out = match &self.kind {
            Kind::Raw { file } if !whole.is_empty() => {
                let s = self.sample_bytes as u64;
                let bytes = file
                    .read_range(whole.start * s..whole.end * s)
                    .map_err(|e| self.backend(e))?;
                bytes
                    .chunks(s.max(1) as usize)
                    .map(<[u8]>::to_vec)
                    .collect()
            }
            Kind::Lzmaf { file, index }
                if !whole.is_empty() && lzmaf_span(index, &whole, file.len()) =>
            {
                let (a, b) = (whole.start as usize, whole.end as usize);
                let bytes = file
                    .read_range(index[a]..index[b])
                    .map_err(|e| self.backend(e))?;
                let at = |k: usize| (index[k] - index[a]) as usize;
                (a..b)
                    .map(|k| self.decompress(k as u64, &bytes[at(k)..at(k + 1)]))
                    .collect::<Result<Vec<_>, _>>()?
            }
            _ => whole
                .clone()
                .map(|i| self.get(i))
                .collect::<Result<Vec<_>, _>>()?,
        };
        if range.end > whole.end {
            // Past what the channel holds: the error `get` gives for it.
            out.push(self.get(whole.end.max(range.start))?);
        }
        Ok(out)
    }

    fn decompress(&self, index: u64, frame: &[u8]) -> Result<Vec<u8>, RemoteError> {
        let shown = Path::new(&self.file);
        let out = lzma::decompress(frame, self.sample_bytes, shown)
            .map_err(|e| self.damaged(index, FrameDamage::Undecodable(e)))?;
        if out.len() != self.sample_bytes {
            let damage = FrameDamage::WrongSize {
                got: out.len(),
                expected: self.sample_bytes,
            };
            return Err(self.damaged(index, damage));
        }
        Ok(out)
    }

    fn lzma_whole(
        &self,
        file: &dyn RangeFile,
        whole: &Mutex<Option<Arc<Vec<u8>>>>,
    ) -> Result<Arc<Vec<u8>>, RemoteError> {
        let mut kept = whole.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = kept.as_ref() {
            return Ok(w.clone());
        }
        let bytes = if file.is_empty() {
            Vec::new()
        } else {
            file.read_range(0..file.len())
                .map_err(|e| self.backend(e))?
        };
        let limit = (self.len.saturating_mul(self.sample_bytes as u64)).min(usize::MAX as u64);
        let out = lzma::decompress(&bytes, limit as usize, Path::new(&self.file))
            .map_err(RemoteError::Format)?;
        let out = Arc::new(out);
        *kept = Some(out.clone());
        Ok(out)
    }
}

/// Whether frames `range` of an `lzmaf` channel are one span of its data: every index entry
/// in order and within the data (else each frame is read, and named, alone).
fn lzmaf_span(index: &[u64], range: &Range<u64>, data_len: u64) -> bool {
    let entries = &index[range.start as usize..=range.end as usize];
    entries.windows(2).all(|w| w[0] <= w[1]) && entries.last().is_some_and(|&e| e <= data_len)
}

/// A channel file that is not there: no sample.
struct Empty;

impl RangeFile for Empty {
    fn len(&self) -> u64 {
        0
    }

    fn read_range(&self, _: std::ops::Range<u64>) -> Result<Vec<u8>, super::BackendError> {
        Ok(Vec::new())
    }
}
