//! The daemon's glibc allocator settings, applied once at start by [`apply`].
//!
//! Two costs pull opposite ways:
//!
//! - **RSS.** glibc raises its mmap threshold as large buffers are freed, after which
//!   multi-MiB frame buffers come from the heap and stay in the process when freed: RSS then
//!   grew past the queue budgets (197 MiB peak against a 142 MiB budget, BENCHMARKS.md). So
//!   the threshold is fixed: a buffer of [`MMAP_THRESHOLD`] or more is its own mapping, handed
//!   back to the kernel on free.
//! - **The `.xz` encoder's tables.** `lzma-rust2` allocates its match finder's tables afresh
//!   for every `lzmaf` frame (`lzma::compress`), and its API has no way to reuse or supply
//!   them. With the threshold at 128 KiB (before issue 25) each table was a fresh mapping,
//!   faulted in page by page as the match finder touched it and unmapped (TLB shootdowns on
//!   every core) after the frame: replaying lidar took the daemon 11x more system CPU than
//!   user CPU. At the default preset 0 the largest table is 1 MiB (the hash chain) and all of
//!   them ~2.5 MiB, so the threshold sits above 1 MiB, and up to [`TRIM_THRESHOLD`] of free
//!   memory at the top of a heap is kept instead of trimmed: the next frame's tables reuse
//!   the last frame's pages (calloc zeroes them, a memset in user space). Higher presets'
//!   tables (4 MiB and more) are still mapped per frame.
//!
//! Frames of 256 KiB to 2 MiB now also come from the heap, and stay in the process when
//! freed: so once large frames stop coming (`bufpool::BufPool::release_idle`), the ingest
//! loop calls [`trim`], which hands every free page of every arena back (measured: the
//! `lzmaf` bench scenario's RSS after the load was 65 MiB without it, idle size before).

/// Allocations of this many bytes or more are mapped on their own (and unmapped on free).
pub const MMAP_THRESHOLD: usize = 2 << 20;

/// Free memory at the top of a heap (per thread arena) is given back to the kernel only past
/// this size: above what one preset-0 encoder and its output take, so they are not trimmed
/// and faulted in again for every frame.
pub const TRIM_THRESHOLD: usize = 8 << 20;

/// Sets the thresholds (glibc only; elsewhere nothing). Call before any thread starts: the
/// settings are process-wide, and `mallopt` here overrides the same settings given by
/// `GLIBC_TUNABLES` / `MALLOC_MMAP_THRESHOLD_` in the environment.
pub fn apply() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; both values fit a c_int.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int);
    }
}

/// Gives the free memory of every heap back to the kernel (glibc's `malloc_trim(0)`: whole
/// free pages anywhere in an arena, not only at its top). For when a load is over: it walks
/// every arena under its lock, and the next allocations fault their pages in again.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
