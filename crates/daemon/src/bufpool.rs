//! Receive buffers for large frames, reused instead of handed back to the kernel.
//!
//! A multi-MiB frame buffer freed by a writer goes back to the kernel (the daemon fixes
//! glibc's mmap threshold, see the `malloc_policy` module), so the next frame's buffer is fresh memory:
//! the kernel zeroes and maps it page by page on first touch. Measured with 4 MiB frames,
//! those faults cost as much CPU as the socket copy itself and held `direct_io` at 0.5-0.7x
//! of `dd oflag=direct`; reusing buffers brought it to 0.9x (BENCHMARKS.md). The pool keeps
//! at most [`FREE_MAX`] bytes of free buffers, and lets them all go once it has been idle for
//! a tick of [`BufPool::release_idle`], so an idle daemon returns to its idle size.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Free buffers kept at most, in bytes.
pub const FREE_MAX: usize = 32 << 20;
/// Buffer sizes are rounded up to this.
const GRAIN: usize = 64 << 10;

/// A pool of receive buffers. See the module docs.
#[derive(Default)]
pub struct BufPool {
    free: Mutex<Vec<Vec<u8>>>,
    /// Set by every `take`, cleared by `release_idle`.
    used: AtomicBool,
}

impl BufPool {
    /// A buffer of at least `len` bytes (contents unspecified), reused when one of a close
    /// size is free: at most a quarter larger, so a queued frame keeps little slack alive.
    pub fn take(self: &Arc<Self>, len: usize) -> PoolBuf {
        self.used.store(true, Relaxed);
        let want = len.div_ceil(GRAIN).max(1) * GRAIN;
        let reused = {
            let mut free = self.free.lock().expect("pool lock");
            free.iter()
                .position(|b| b.len() >= want && b.len() <= want + want / 4)
                .map(|i| free.swap_remove(i))
        };
        PoolBuf {
            buf: reused.unwrap_or_else(|| vec![0; want]),
            len,
            pool: self.clone(),
        }
    }

    fn give(&self, buf: Vec<u8>) {
        let mut free = self.free.lock().expect("pool lock");
        let held: usize = free.iter().map(Vec::len).sum();
        if held + buf.len() <= FREE_MAX {
            free.push(buf);
        }
    }

    /// Call periodically: drops every free buffer if nothing was taken since the last call.
    /// True when that dropped any: the first idle tick after large frames came in, when the
    /// caller may hand the process's freed memory back (`malloc_policy::trim`).
    pub fn release_idle(&self) -> bool {
        if self.used.swap(false, Relaxed) {
            return false;
        }
        let mut free = self.free.lock().expect("pool lock");
        let dropped = !free.is_empty();
        free.clear();
        dropped
    }

    /// Bytes of free buffers held.
    pub fn free_bytes(&self) -> usize {
        self.free
            .lock()
            .expect("pool lock")
            .iter()
            .map(Vec::len)
            .sum()
    }
}

/// A buffer from a [`BufPool`]; goes back to it when dropped (also when it was turned into
/// `Bytes` with [`PoolBuf::into_bytes`] and the last clone is dropped).
pub struct PoolBuf {
    buf: Vec<u8>,
    len: usize,
    pool: Arc<BufPool>,
}

impl PoolBuf {
    /// The first `len` bytes as `Bytes`, without a copy.
    pub fn into_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for PoolBuf {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The first `len` bytes, to fill.
impl AsMut<[u8]> for PoolBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_by_size_and_released_when_idle() {
        let pool = Arc::new(BufPool::default());
        let mut a = pool.take(4 << 20);
        a.as_mut()[0] = 7;
        let addr = a.as_ref().as_ptr();
        let bytes = a.into_bytes();
        assert_eq!(bytes.len(), 4 << 20);
        assert_eq!(bytes[0], 7);
        assert_eq!(pool.free_bytes(), 0, "in use while the Bytes lives");
        drop(bytes);
        assert_eq!(pool.free_bytes(), 4 << 20);
        // A close size reuses it; a much smaller one does not.
        let b = pool.take((4 << 20) - 100);
        assert_eq!(b.as_ref().as_ptr(), addr);
        assert_eq!(b.as_ref().len(), (4 << 20) - 100);
        let c = pool.take(1 << 20);
        assert_ne!(c.as_ref().as_ptr(), addr);
        drop((b, c));
        assert_eq!(pool.free_bytes(), 5 << 20);
        // Used since the last tick: kept; idle for a whole tick: released.
        assert!(!pool.release_idle());
        assert_eq!(pool.free_bytes(), 5 << 20);
        assert!(pool.release_idle(), "says it dropped buffers");
        assert_eq!(pool.free_bytes(), 0);
        assert!(!pool.release_idle(), "nothing left to drop");
    }

    #[test]
    fn free_buffers_are_capped() {
        let pool = Arc::new(BufPool::default());
        let bufs: Vec<PoolBuf> = (0..(FREE_MAX / (4 << 20)) + 3)
            .map(|_| pool.take(4 << 20))
            .collect();
        drop(bufs);
        assert!(pool.free_bytes() <= FREE_MAX);
        assert!(pool.free_bytes() > FREE_MAX - (4 << 20));
    }
}
