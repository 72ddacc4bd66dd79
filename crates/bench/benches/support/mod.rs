//! Shared by the bench binaries.

use std::time::{Duration, Instant};

/// Runs `f` `repeats` times; the fastest time and the last result.
pub fn best<T>(repeats: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("at least one run"))
}
