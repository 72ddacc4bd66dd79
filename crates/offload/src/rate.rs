//! `--rate`: a pacer that keeps every 10-second window of sending under the cap. Each part
//! may start only at its scheduled time, and the schedule advances by the part's size over
//! a pace a little under the cap: one whole part can start at the end of a window, so the
//! pace leaves that part's room (`pace = rate - part / 10 s`, at least half the rate).

use std::time::{Duration, Instant};

/// The window no stretch of sending may exceed the cap over.
pub const WINDOW: Duration = Duration::from_secs(10);

pub struct Pacer {
    pace: f64,
    next: Option<Instant>,
}

impl Pacer {
    /// `rate` bytes per second, for parts of at most `part` bytes.
    pub fn new(rate: u64, part: u64) -> Pacer {
        let rate = rate as f64;
        let pace = (rate - part as f64 / WINDOW.as_secs_f64()).max(rate / 2.0);
        Pacer { pace, next: None }
    }

    /// How long a part of `n` bytes must wait before it starts, at `now`; books it.
    pub fn book(&mut self, n: u64, now: Instant) -> Duration {
        let start = self.next.map_or(now, |t| t.max(now));
        self.next = Some(start + Duration::from_secs_f64(n as f64 / self.pace));
        start - now
    }

    /// Waits until a part of `n` bytes may start.
    pub fn wait(&mut self, n: u64) {
        let d = self.book(n, Instant::now());
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes started in every window of the schedule stay under the cap, parts of several
    /// sizes included.
    #[test]
    fn no_window_goes_over_the_cap() {
        let (rate, part) = (20_000_000u64, 8u64 << 20);
        let mut p = Pacer::new(rate, part);
        let t0 = Instant::now();
        let mut starts = Vec::new();
        let mut now = t0;
        for k in 0..200u64 {
            let n = if k % 7 == 3 { 1000 } else { part };
            now += p.book(n, now);
            starts.push((now - t0, n));
        }
        for (i, (a, _)) in starts.iter().enumerate() {
            let sum: u64 = starts[i..]
                .iter()
                .take_while(|(b, _)| *b < *a + WINDOW)
                .map(|(_, n)| n)
                .sum();
            assert!(
                sum <= rate * WINDOW.as_secs(),
                "{sum} bytes in the window from {a:?}"
            );
        }
        // And the pace is not far under the cap: the 200 parts take at most 10% longer.
        let total: u64 = starts.iter().map(|(_, n)| n).sum();
        let took = starts.last().unwrap().0.as_secs_f64();
        assert!(took < total as f64 / rate as f64 * 1.1, "{took} s");
    }
}
