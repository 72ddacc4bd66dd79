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
