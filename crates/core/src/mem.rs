//! Memory hints for large output buffers, shared by the readers and the Python binding.

/// Asks for transparent huge pages over `buf` when it is 4 MiB or more, as numpy does for its
/// own arrays of that size: a large output gets fresh memory each time, and with 4 KiB pages
/// the first write to each page costs a page fault, which measured as much as the decoding
/// itself (whole-array zarr reads, gulp frame blocks). Only a hint: a failure (or another
/// OS) changes nothing.
pub fn advise_huge_pages<T>(buf: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let len = std::mem::size_of_val(buf);
        if len < 4 << 20 {
            return;
        }
        let start = buf.as_mut_ptr() as usize;
        let aligned = start.next_multiple_of(PAGE);
        let end = (start + len) / PAGE * PAGE;
        if end > aligned {
            // SAFETY: madvise only changes the kernel's paging policy of whole pages inside
            // the live allocation `buf` (aligned..end lies within it); it neither reads nor
            // writes the memory and cannot invalidate it. A failure is harmless and ignored.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Drops the pages of a read-only file mapping that a reader going through it in order has
/// passed, so a verb streaming a large file (`validate --deep`, `extract`, `import`) keeps a
/// bounded resident set instead of every page it touched (file-backed and reclaimable, but
/// counted as its RSS). Reads out of order (a random `get`) release nothing.
///
/// Safe for the maps the readers make (`MAP_SHARED`, read-only, of a file): a dropped page is
/// read again from the page cache if touched, holding the same bytes.
#[derive(Debug, Default)]
pub struct ReleaseBehind {
    /// The sample a read in order comes to next.
    next: std::sync::atomic::AtomicU64,
    /// Bytes of the map released so far (a page multiple).
    released: std::sync::atomic::AtomicU64,
}

impl ReleaseBehind {
    /// Bytes read in order past the last release before releasing again.
    pub const WINDOW: u64 = 16 << 20;

    /// Notes a read of sample `index` starting at byte `start` of `map`; when the reads have
    /// come in order and moved [`WINDOW`](Self::WINDOW) past the last release, releases the
    /// whole pages before `start`'s page.
    pub fn read(&self, map: &memmap2::Mmap, index: u64, start: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.next.swap(index + 1, Relaxed) != index {
            return;
        }
        let released = self.released.load(Relaxed);
        if start < released + Self::WINDOW {
            return;
        }
        let upto = start / 4096 * 4096;
        // SAFETY: see the type's doc: DONTNEED on a shared read-only file mapping only drops
        // page table entries; the bytes stay valid and are faulted in again if touched.
        let r = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                released as usize,
                (upto - released) as usize,
            )
        };
        if r.is_ok() {
            self.released.store(upto, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReleaseBehind;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn reads_in_order_release_the_pages_behind_them_and_random_reads_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let len = 3 * ReleaseBehind::WINDOW;
        std::fs::write(&p, vec![7u8; len as usize]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        // SAFETY: a test file nobody else writes.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        let step = 1 << 20;
        let r = ReleaseBehind::default();
        for (i, start) in (0..len).step_by(step).enumerate() {
            r.read(&map, (i as u64 * 7919) % 40, start);
        }
        assert_eq!(
            r.released.load(Relaxed),
            0,
            "out of order: nothing released"
        );
        let r = ReleaseBehind::default();
        let mut sum = 0u64;
        for (i, start) in (0..len).step_by(step).enumerate() {
            r.read(&map, i as u64, start);
            sum += u64::from(map[start as usize]);
        }
        let released = r.released.load(Relaxed);
        assert!(released >= 2 * ReleaseBehind::WINDOW, "{released}");
        assert_eq!(released % 4096, 0);
        // Released pages read the same bytes again.
        assert_eq!(map[0], 7);
        assert_eq!(sum, 7 * (len / step as u64));
    }
}
