//! Reading rows of an N-d array whose chunks split rows (chunks narrower than the array in a
//! trailing dimension): each chunk's intersection with the requested rows is copied into the
//! output, run by run along the last dimension.
//!
//! Chunks the request covers in full are decoded on the worker threads straight into a
//! per-thread buffer and copied into the output there (disjoint regions, no cache: a whole
//! read would only evict everything). Chunks the request cuts go through the decoded-chunk
//! cache, so neighbouring slices decode them once.

use std::ops::Range;

use super::{for_each_index, par_for_each, ZarrArray};
use crate::error::Result;

/// Where the rows go: the output's base pointer, written at disjoint offsets by the workers.
struct Out(*mut u8, usize);

// SAFETY: workers write through the pointer only at offsets of their own chunk's
// intersection, which never overlap (chunks tile the array), while `read_nd` holds the
// unique borrow of the output and waits for them.
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl ZarrArray {
    /// Copies the intersection of chunk `cidx` (decoded, `chunk`) with rows `range` into the
    /// output, by calling `put(offset, bytes)` for each run.
    fn copy_intersection(
        &self,
        range: &Range<u64>,
        cidx: &[u64],
        chunk: &[u8],
        put: &mut dyn FnMut(usize, &[u8]),
    ) {
        let nd = self.shape.len();
        let item = self.meta.dtype.itemsize();
        let mut ostride = vec![1u64; nd];
        let mut cstride = vec![1u64; nd];
        for d in (0..nd - 1).rev() {
            ostride[d] = ostride[d + 1] * self.shape[d + 1];
            cstride[d] = cstride[d + 1] * self.chunks[d + 1];
        }
        let lo: Vec<u64> = (0..nd)
            .map(|d| {
                let s = cidx[d] * self.chunks[d];
                if d == 0 {
                    s.max(range.start)
                } else {
                    s
                }
            })
            .collect();
        let hi: Vec<u64> = (0..nd)
            .map(|d| {
                let e = ((cidx[d] + 1) * self.chunks[d]).min(self.shape[d]);
                if d == 0 {
                    e.min(range.end)
                } else {
                    e
                }
            })
            .collect();
        let run = (hi[nd - 1] - lo[nd - 1]) as usize * item;
        let outer: Vec<u64> = (0..nd - 1).map(|d| hi[d] - lo[d]).collect();
        for_each_index(&outer, &mut |off| {
            let mut o = 0u64;
            let mut c = 0u64;
            for d in 0..nd {
                let a = if d < nd - 1 { lo[d] + off[d] } else { lo[d] };
                let orow = if d == 0 { a - range.start } else { a };
                o += orow * ostride[d];
                c += (a - cidx[d] * self.chunks[d]) * cstride[d];
            }
            let (o, c) = (o as usize * item, c as usize * item);
            put(o, &chunk[c..c + run]);
        });
    }

    /// General N-d case: copy the intersection of every chunk with the requested rows.
    pub(super) fn read_nd(&self, range: Range<u64>, out: &mut [u8]) -> Result<()> {
        let grid = self.meta.chunk_grid();
        let c0 = self.chunks[0];
        let mut direct: Vec<Vec<u64>> = Vec::new();
        let mut cached: Vec<Vec<u64>> = Vec::new();
        let mut idx = vec![0u64; self.shape.len()];
        for i in range.start / c0..=(range.end - 1) / c0 {
            idx[0] = i;
            let whole = i * c0 >= range.start && ((i + 1) * c0).min(self.shape[0]) <= range.end;
            for_each_index(&grid[1..], &mut |rest| {
                idx[1..].copy_from_slice(rest);
                let in_cache = self.cache.lock().unwrap().contains(&idx);
                if whole && !in_cache {
                    direct.push(idx.clone());
                } else {
                    cached.push(idx.clone());
                }
            });
        }
        // Bounded batches keep memory at a few chunks per thread.
        for batch in cached.chunks(self.threads() * 2) {
            let chunks = self.chunks_cached(batch)?;
            for (cidx, chunk) in batch.iter().zip(chunks) {
                self.copy_intersection(&range, cidx, &chunk, &mut |o, b| {
                    out[o..o + b.len()].copy_from_slice(b)
                });
            }
        }
        let dst = Out(out.as_mut_ptr(), out.len());
        let chunk_bytes = self.meta.chunk_bytes();
        par_for_each(direct, self.threads(), |cidx| {
            thread_local! {
                static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
            }
            BUF.with_borrow_mut(|buf| -> Result<()> {
                buf.resize(chunk_bytes, 0);
                self.decode_chunk(&cidx, buf)?;
                let dst = &dst;
                self.copy_intersection(&range, &cidx, buf, &mut |o, b| {
                    assert!(o + b.len() <= dst.1, "a run past the output");
                    // SAFETY: in bounds (checked above) and disjoint from every other
                    // worker's runs (see `Out`).
                    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), dst.0.add(o), b.len()) }
                });
                if buf.capacity() > 64 << 20 {
                    *buf = Vec::new();
                }
                Ok(())
            })
        })
    }
}
