//! [`ZarrArray`]: row-range reads of one Zarr v2 array in a directory store.
//!
//! A "row" is one index along the first dimension (one element of a 1-D array, one
//! structured record in L5Kit). Reads return rows packed and little-endian, exactly
//! zarr-python's `array[a:b].tobytes()` after converting to little-endian.
//!
//! Chunks wholly inside the requested range and spanning whole rows are decoded straight into
//! the output (in parallel); chunks only partly needed (the ends of a range, padded last
//! chunks, N-d chunkings) are decoded once into a small LRU of decoded chunks, because the
//! typical access pattern (L5Kit: a frame's agents, then the next frame's) hits the same chunk
//! again and again.

use std::collections::VecDeque;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::dtype::{numpy_str_shaped, DType, SwapPlan};
use super::meta::ArrayMeta;
use super::values::{decode_values, Column};
use super::{read_limited_into, zerr, MAX_CHUNK_BYTES};
use crate::error::{Error, Result, ZarrProblem};

/// Default budget of the decoded-chunk cache.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;
mod nd;

/// Slack allowed for a compressed chunk over its decoded size (codec framing, incompressible
/// data) before we refuse to read the file.
const COMPRESSED_SLACK: u64 = 1 << 20;

type Chunk = Arc<Vec<u8>>;

/// One Zarr v2 array, opened for reading.
#[derive(Debug)]
pub struct ZarrArray {
    path: PathBuf,
    meta: ArrayMeta,
    /// Shape and chunks used for addressing (`[1]` for a 0-d array).
    shape: Vec<u64>,
    chunks: Vec<u64>,
    swap: SwapPlan,
    /// One element of fill, little-endian (zeros for `fill_value: null`).
    fill: Vec<u8>,
    cache: Mutex<ChunkCache>,
    /// Threads decoding one read; shared so that a caller holding the array behind `&`
    /// (several readers, a Python object) can change it between reads, as the cache budget.
    threads: AtomicUsize,
}

impl ZarrArray {
    /// Opens the array stored in directory `path` (which holds `.zarray`). Errors when the
    /// metadata is invalid or uses something we cannot decode (compressor, filters, order).
    pub fn open(path: impl AsRef<Path>) -> Result<ZarrArray> {
        let path = path.as_ref().to_path_buf();
        let meta = ArrayMeta::read(&path)?;
        meta.check_readable(&path)?;
        Ok(ZarrArray::from_meta(path, meta))
    }

    fn from_meta(path: PathBuf, meta: ArrayMeta) -> ZarrArray {
        let (shape, chunks) = if meta.shape.is_empty() {
            (vec![1], vec![1])
        } else {
            (meta.shape.clone(), meta.chunks.clone())
        };
        let swap = meta.dtype.swap_plan();
        let mut fill = meta
            .fill_value
            .clone()
            .unwrap_or_else(|| vec![0; meta.dtype.itemsize()]);
        swap.apply(&mut fill);
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        ZarrArray {
            path,
            meta,
            shape,
            chunks,
            swap,
            fill,
            cache: Mutex::new(ChunkCache::new(DEFAULT_CACHE_BYTES)),
            threads: AtomicUsize::new(threads),
        }
    }

    /// The array's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parsed `.zarray`.
    pub fn meta(&self) -> &ArrayMeta {
        &self.meta
    }

    /// The stored dtype (reads return its little-endian version).
    pub fn dtype(&self) -> &DType {
        &self.meta.dtype
    }

    /// Number of rows (first dimension; 1 for a 0-d array).
    pub fn len(&self) -> u64 {
        self.shape[0]
    }

    /// True when the array has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per row: itemsize times the product of the trailing dimensions.
    pub fn row_bytes(&self) -> usize {
        self.shape[1..].iter().product::<u64>() as usize * self.meta.dtype.itemsize()
    }

    /// Sets the budget of the decoded-chunk cache (0 disables caching).
    pub fn set_cache_bytes(&self, bytes: usize) {
        let mut c = self.cache.lock().unwrap();
        c.budget = bytes;
        c.evict();
    }

    /// Sets how many threads decode chunks of one read (at least 1).
    pub fn set_threads(&self, n: usize) {
        self.threads.store(n.max(1), Ordering::Relaxed);
    }

    /// How many threads decode chunks of one read.
    pub fn threads(&self) -> usize {
        self.threads.load(Ordering::Relaxed)
    }

    /// Reads the whole array.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        self.read_rows(0..self.len())
    }

    /// Reads rows `range` (must lie within `0..len()`), packed and little-endian.
    pub fn read_rows(&self, range: Range<u64>) -> Result<Vec<u8>> {
        if range.start > range.end || range.end > self.len() {
            return Err(zerr(
                &self.path,
                ZarrProblem::RowsOutOfRange {
                    start: range.start,
                    end: range.end,
                    rows: self.len(),
                },
            ));
        }
        let row_bytes = self.row_bytes() as u64;
        let total = (range.end - range.start).saturating_mul(row_bytes);
        let too_large = || Error::TooLarge {
            what: format!("read of rows {range:?} of {}", self.path.display()),
            got: total,
            limit: isize::MAX as u64,
        };
        let total = usize::try_from(total)
            .ok()
            .filter(|&t| t <= isize::MAX as usize)
            .ok_or_else(too_large)?;
        let mut out = alloc_output(total).ok_or_else(too_large)?;
        if total == 0 {
            return Ok(out);
        }
        if self.shape[1..] == self.chunks[1..] {
            self.read_row_chunks(range, &mut out)?;
        } else {
            self.read_nd(range, &mut out)?;
        }
        Ok(out)
    }

    /// Reads rows `range` and keeps them for field extraction.
    pub fn read_records(&self, range: Range<u64>) -> Result<Rows> {
        let bytes = self.read_rows(range)?;
        Ok(Rows {
            dtype: self.meta.dtype.to_little_endian(),
            row_elems: self.shape[1..].iter().product::<u64>() as usize,
            bytes,
        })
    }

    /// One field of rows `range` as typed values (`field` may be dotted: `"a.b"`).
    pub fn read_field(&self, field: &str, range: Range<u64>) -> Result<Column> {
        self.read_records(range)?.column(field)
    }

    /// One field of rows `range` as packed little-endian bytes (numpy's
    /// `array[a:b][field].tobytes()` in little-endian).
    pub fn read_field_bytes(&self, field: &str, range: Range<u64>) -> Result<Vec<u8>> {
        self.read_records(range)?.field_bytes(field)
    }

    /// Each chunk covers whole rows: chunk `i` maps to one contiguous run of the output.
    fn read_row_chunks(&self, range: Range<u64>, out: &mut [u8]) -> Result<()> {
        let c0 = self.chunks[0];
        let row_bytes = self.row_bytes();
        let chunk_bytes = self.meta.chunk_bytes();
        let first = range.start / c0;
        let last = (range.end - 1) / c0;
        let mut direct: Vec<(u64, &mut [u8])> = Vec::new();
        let mut partial: Vec<(u64, usize, &mut [u8])> = Vec::new();
        let mut rest = out;
        for i in first..=last {
            let lo = range.start.max(i * c0);
            let hi = range.end.min((i + 1) * c0);
            let (dst, tail) = rest.split_at_mut((hi - lo) as usize * row_bytes);
            rest = tail;
            let skip = (lo - i * c0) as usize * row_bytes;
            if skip == 0 && dst.len() == chunk_bytes && !self.cache_has(i) {
                direct.push((i, dst));
            } else {
                partial.push((i, skip, dst));
            }
        }
        let partial_idx: Vec<Vec<u64>> = partial.iter().map(|p| self.grid_index(p.0)).collect();
        let chunks = self.chunks_cached(&partial_idx)?;
        for ((_, skip, dst), chunk) in partial.into_iter().zip(chunks) {
            dst.copy_from_slice(&chunk[skip..skip + dst.len()]);
        }
        let jobs: Vec<_> = direct
            .into_iter()
            .map(|(i, dst)| (self.grid_index(i), dst))
            .collect();
        par_for_each(jobs, self.threads(), |(idx, dst)| {
            self.decode_chunk(&idx, dst)
        })
    }

    fn grid_index(&self, row_chunk: u64) -> Vec<u64> {
        let mut idx = vec![0; self.shape.len()];
        idx[0] = row_chunk;
        idx
    }

    fn cache_has(&self, row_chunk: u64) -> bool {
        let idx = self.grid_index(row_chunk);
        self.cache.lock().unwrap().contains(&idx)
    }

    /// The decoded chunks at `idxs`, from the cache or decoded (in parallel) and cached.
    fn chunks_cached(&self, idxs: &[Vec<u64>]) -> Result<Vec<Chunk>> {
        let mut found: Vec<Option<Chunk>> = {
            let mut c = self.cache.lock().unwrap();
            idxs.iter().map(|i| c.get(i)).collect()
        };
        let missing: Vec<usize> = (0..idxs.len()).filter(|&k| found[k].is_none()).collect();
        let decoded = par_map(&missing, self.threads(), |&k| {
            let mut buf = vec![0u8; self.meta.chunk_bytes()];
            self.decode_chunk(&idxs[k], &mut buf)?;
            Ok(Arc::new(buf))
        })?;
        let mut c = self.cache.lock().unwrap();
        for (k, chunk) in missing.into_iter().zip(decoded) {
            c.insert(idxs[k].clone(), chunk.clone());
            found[k] = Some(chunk);
        }
        Ok(found.into_iter().map(Option::unwrap).collect())
    }

    /// Decodes the chunk at grid index `idx` into `dst` (exactly one chunk's bytes),
    /// little-endian; a missing chunk is filled with the fill value.
    fn decode_chunk(&self, idx: &[u64], dst: &mut [u8]) -> Result<()> {
        let key = if self.meta.shape.is_empty() {
            "0".to_string()
        } else {
            self.meta.chunk_key(idx)
        };
        let p = self.path.join(&key);
        let limit = MAX_CHUNK_BYTES.min(dst.len() as u64 * 2) + COMPRESSED_SLACK;
        thread_local! {
            // Compressed bytes of the chunk being decoded, reused across chunks: a fresh
            // allocation per chunk costs page faults comparable to reading the file.
            static SRC: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let found = SRC.with_borrow_mut(|src| -> Result<bool> {
            if !read_limited_into(&p, limit, "chunk", src)? {
                return Ok(false);
            }
            let what = p.display().to_string();
            let decoded = if self.meta.chain.is_empty() {
                self.meta.compressor.decode_into(src, dst, &what)
            } else {
                super::filters::decode_chain(&self.meta.chain, dst, |buf| {
                    let c = &self.meta.compressor;
                    c.decode_into(src, buf, &what)
                })
                .map_err(|e| crate::Error::Chunk {
                    codec: "filters".into(),
                    what: what.clone(),
                    inner: Box::new(e),
                })
            };
            if src.capacity() > 64 << 20 {
                // Do not keep a huge buffer pinned in this thread after an odd chunk.
                *src = Vec::new();
            }
            decoded.map(|()| true)
        })?;
        if found {
            if self.meta.order == super::meta::Order::F {
                super::order::f_to_c(dst, &self.chunks, self.meta.dtype.itemsize());
            }
            self.swap.apply(dst);
        } else if self.fill.iter().all(|&b| b == 0) {
            dst.fill(0);
        } else {
            for el in dst.chunks_exact_mut(self.fill.len()) {
                el.copy_from_slice(&self.fill);
            }
        }
        Ok(())
    }
}

/// A zeroed output buffer, `None` when the allocator refuses (a hostile shape must not abort
/// the process). Large buffers get the transparent-huge-page hint numpy also gives its arrays
/// of 4 MiB and more: without it, the first write to each 4 KiB page of a whole-array read
/// costs a page fault, which measured as much as the decoding itself.
fn alloc_output(len: usize) -> Option<Vec<u8>> {
    if len == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    // SAFETY: `layout` has non-zero size. A non-null result is `len` zeroed bytes from the
    // global allocator with exactly this layout (align 1), which is what Vec::from_raw_parts
    // requires for a Vec<u8> of length and capacity `len`.
    let mut out = unsafe {
        let ptr = std::alloc::alloc_zeroed(layout);
        if ptr.is_null() {
            return None;
        }
        Vec::from_raw_parts(ptr, len, len)
    };
    crate::mem::advise_huge_pages(&mut out);
    Some(out)
}

/// Rows read once, from which any number of fields can be sliced without decoding again.
#[derive(Debug, Clone)]
pub struct Rows {
    /// The dtype of `bytes` (little-endian).
    pub dtype: DType,
    /// Elements per row (product of the trailing dimensions).
    pub row_elems: usize,
    /// Packed little-endian rows.
    pub bytes: Vec<u8>,
}

impl Rows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        let row = self.dtype.itemsize() * self.row_elems;
        self.bytes.len().checked_div(row).unwrap_or(0)
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn locate(&self, field: &str) -> Result<(usize, DType, Vec<usize>)> {
        let (off, dt, shape) = self.dtype.find_field(field).ok_or_else(|| {
            let names: Vec<&str> = self
                .dtype
                .fields()
                .iter()
                .map(|f| f.name.as_str())
                .filter(|n| !n.is_empty())
                .collect();
            zerr(
                Path::new(field),
                ZarrProblem::NoSuchField {
                    fields: names.into_iter().map(str::to_owned).collect(),
                },
            )
        })?;
        Ok((off, dt.clone(), shape))
    }

    /// The packed little-endian bytes of one field over all rows.
    pub fn field_bytes(&self, field: &str) -> Result<Vec<u8>> {
        let (off, dt, shape) = self.locate(field)?;
        let size = shape.iter().product::<usize>() * dt.itemsize();
        let item = self.dtype.itemsize();
        let mut out = Vec::with_capacity(size * self.bytes.len() / item.max(1));
        for el in self.bytes.chunks_exact(item) {
            out.extend_from_slice(&el[off..off + size]);
        }
        Ok(out)
    }

    /// One field over all rows as typed values.
    pub fn column(&self, field: &str) -> Result<Column> {
        let (_, dt, mut shape) = self.locate(field)?;
        let DType::Scalar(s) = dt else {
            return Err(zerr(
                Path::new(field),
                ZarrProblem::StructuredField {
                    field: field.to_string(),
                    dtype: numpy_str_shaped(&dt, &shape),
                },
            ));
        };
        let bytes = self.field_bytes(field)?;
        if self.row_elems != 1 {
            shape.insert(0, self.row_elems);
        }
        Ok(Column {
            rows: self.len(),
            shape,
            values: decode_values(&s, &bytes),
        })
    }

    /// The values of a non-structured array.
    pub fn values(&self) -> Result<Column> {
        let DType::Scalar(s) = &self.dtype else {
            return Err(zerr(Path::new("<rows>"), ZarrProblem::StructuredRows));
        };
        Ok(Column {
            rows: self.len(),
            shape: if self.row_elems == 1 {
                vec![]
            } else {
                vec![self.row_elems]
            },
            values: decode_values(s, &self.bytes),
        })
    }
}

/// LRU of decoded chunks, bounded by total bytes (always keeps the newest one while it is
/// being used, even if it alone exceeds the budget).
#[derive(Debug)]
struct ChunkCache {
    entries: VecDeque<(Vec<u64>, Chunk)>,
    bytes: usize,
    budget: usize,
}

impl ChunkCache {
    fn new(budget: usize) -> Self {
        ChunkCache {
            entries: VecDeque::new(),
            bytes: 0,
            budget,
        }
    }

    fn contains(&self, idx: &[u64]) -> bool {
        self.entries.iter().any(|(k, _)| k == idx)
    }

    fn get(&mut self, idx: &[u64]) -> Option<Chunk> {
        let pos = self.entries.iter().position(|(k, _)| k == idx)?;
        let e = self.entries.remove(pos)?;
        let chunk = e.1.clone();
        self.entries.push_back(e);
        Some(chunk)
    }

    fn insert(&mut self, idx: Vec<u64>, chunk: Chunk) {
        if self.budget == 0 || chunk.len() > self.budget {
            return;
        }
        if self.contains(&idx) {
            return;
        }
        self.bytes += chunk.len();
        self.entries.push_back((idx, chunk));
        self.evict();
    }

    fn evict(&mut self) {
        while self.bytes > self.budget {
            match self.entries.pop_front() {
                Some((_, c)) => self.bytes -= c.len(),
                None => break,
            }
        }
    }
}

/// Calls `f` with every index tuple below `dims` (C order); once with `[]` for no dims.
fn for_each_index(dims: &[u64], f: &mut dyn FnMut(&[u64])) {
    if dims.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; dims.len()];
    loop {
        f(&idx);
        let mut d = dims.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Runs `f` on every job using up to `threads` scoped threads; first error wins.
fn par_for_each<J: Send>(
    jobs: Vec<J>,
    threads: usize,
    f: impl Fn(J) -> Result<()> + Sync,
) -> Result<()> {
    let n = threads.min(jobs.len());
    if n <= 1 {
        return jobs.into_iter().try_for_each(f);
    }
    let queue = Mutex::new(jobs.into_iter());
    let first_err: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| loop {
                if first_err.lock().unwrap().is_some() {
                    return;
                }
                let Some(job) = queue.lock().unwrap().next() else {
                    return;
                };
                if let Err(e) = f(job) {
                    first_err.lock().unwrap().get_or_insert(e);
                }
            });
        }
    });
    match first_err.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Maps `f` over `items` in parallel, keeping order.
fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let mut out: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let jobs: Vec<(&T, &mut Option<R>)> = items.iter().zip(out.iter_mut()).collect();
    par_for_each(jobs, threads, |(item, slot)| {
        *slot = Some(f(item)?);
        Ok(())
    })?;
    Ok(out.into_iter().map(Option::unwrap).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_iteration_is_c_order() {
        let mut seen = Vec::new();
        for_each_index(&[2, 3], &mut |i| seen.push(i.to_vec()));
        assert_eq!(seen.len(), 6);
        assert_eq!(seen[1], [0, 1]);
        let mut n = 0;
        for_each_index(&[], &mut |_| n += 1);
        assert_eq!(n, 1);
    }

    #[test]
    fn cache_evicts_oldest() {
        let mut c = ChunkCache::new(10);
        c.insert(vec![0], Arc::new(vec![0; 6]));
        c.insert(vec![1], Arc::new(vec![0; 4]));
        assert!(c.get(&[0]).is_some());
        c.insert(vec![2], Arc::new(vec![0; 4]));
        assert!(!c.contains(&[1]));
        assert!(c.contains(&[0]) && c.contains(&[2]));
    }
}
