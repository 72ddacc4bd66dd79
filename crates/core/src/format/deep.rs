//! `validate --deep`'s frame decoding on every core: frames are handed out in order, a
//! chunk at a time, to a few threads (the calling one among them, which alone reports
//! progress). Each thread holds one frame's decoded bytes at a time, so memory does not
//! grow with the channel.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Frames per hand-out: large enough that taking one is rare, small enough that the threads
/// finish together and progress moves.
const CHUNK: u64 = 64;

/// Frames at most handed out and not yet done: every frame this far below the frames done
/// is checked.
pub(crate) fn max_in_flight() -> u64 {
    CHUNK * threads()
}

/// Threads to decode on: every CPU the process may use ([`crate::cpus::usable`]).
fn threads() -> u64 {
    crate::cpus::usable() as u64
}

/// Runs `check` on frames `0..frames`, in chunks over several threads, and returns the
/// frames it found bad with what it found, in frame order. With `first_only`, frames past
/// the first bad one are not all checked and only that one is returned (every frame before
/// it was checked). `progress(done, bytes)` hears the frames checked and their `size`s
/// summed, from the calling thread.
pub(crate) fn check_frames<P: Send>(
    frames: u64,
    first_only: bool,
    size: impl Fn(u64) -> u64 + Sync,
    check: impl Fn(u64) -> Option<P> + Sync,
    progress: &mut dyn FnMut(u64, u64),
) -> Vec<(u64, P)> {
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    // Lowest bad frame so far (with `first_only`, no chunk starting past it is taken).
    let first_bad = AtomicU64::new(u64::MAX);
    let found = Mutex::new(Vec::new());
    // Checks the next chunk; false when there is none left to check.
    let one_chunk = || -> bool {
        let start = next.fetch_add(CHUNK, Relaxed);
        if start >= frames || (first_only && start > first_bad.load(Relaxed)) {
            return false;
        }
        let end = (start + CHUNK).min(frames);
        let mut b = 0;
        for k in start..end {
            b += size(k);
            if let Some(p) = check(k) {
                first_bad.fetch_min(k, Relaxed);
                found.lock().unwrap_or_else(|e| e.into_inner()).push((k, p));
                if first_only {
                    break;
                }
            }
        }
        done.fetch_add(end - start, Relaxed);
        bytes.fetch_add(b, Relaxed);
        true
    };
    let one_chunk = &one_chunk;
    progress(0, 0);
    std::thread::scope(|s| {
        for _ in 1..threads() {
            s.spawn(move || while one_chunk() {});
        }
        // The calling thread works too, reporting between its chunks.
        while one_chunk() {
            progress(done.load(Relaxed), bytes.load(Relaxed));
        }
    });
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    found.sort_by_key(|(k, _)| *k);
    if first_only {
        found.truncate(1);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames 300, 301 and 700 of 1,000 are bad: more chunks than threads, bad frames in
    /// chunks that different threads may take, one past another in the same chunk.
    fn bad(k: u64) -> Option<u64> {
        [300, 301, 700].contains(&k).then_some(k * 10)
    }

    #[test]
    fn every_bad_frame_in_order_and_every_frame_counted() {
        let mut seen = Vec::new();
        let found = check_frames(1000, false, |_| 3, bad, &mut |d, b| seen.push((d, b)));
        assert_eq!(found, vec![(300, 3000), (301, 3010), (700, 7000)]);
        assert_eq!(seen.first(), Some(&(0, 0)));
        assert!(seen
            .windows(2)
            .all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1));
    }

    #[test]
    fn first_only_finds_the_lowest_bad_frame() {
        for _ in 0..20 {
            let found = check_frames(1000, true, |_| 1, bad, &mut |_, _| {});
            assert_eq!(found, vec![(300, 3000)]);
        }
        assert!(check_frames(1000, true, |_| 1, |_| None::<()>, &mut |_, _| {}).is_empty());
        assert!(check_frames(0, false, |_| 1, |_| Some(()), &mut |_, _| {}).is_empty());
    }
}
