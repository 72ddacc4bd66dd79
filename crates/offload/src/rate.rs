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

    /// Waits until a part of `n` bytes may start; false when `stopped` said so first
    /// (asked every 100 ms at most).
    pub fn wait(&mut self, n: u64, stopped: impl Fn() -> bool) -> bool {
        let until = Instant::now() + self.book(n, Instant::now());
        loop {
            let now = Instant::now();
            if now >= until {
                return true;
            }
            if stopped() {
                return false;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(100)));
        }
    }
}

/// A size or rate that [`parse_bytes`] refused, with the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BytesError {
    #[error("{text:?}: unknown unit {unit:?} (B, KB, MB, GB, KiB, MiB, GiB)")]
    Unit { text: String, unit: String },
    #[error("{text:?}: not a size (e.g. 20MB/s)")]
    NotANumber { text: String },
    #[error("{text:?}: must be more than 0")]
    Zero { text: String },
}

/// `20MB/s`, `500KiB/s`, `1G`, `1000`: bytes (per second).
pub fn parse_bytes(text: &str) -> Result<u64, BytesError> {
    let t = text.trim().trim_end_matches("/s");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "k" | "K" | "KB" | "kB" => 1_000,
        "M" | "MB" => 1_000_000,
        "G" | "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        u => {
            return Err(BytesError::Unit {
                text: text.into(),
                unit: u.into(),
            })
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| BytesError::NotANumber { text: text.into() })?;
    let v = (n * mult as f64) as u64;
    if v == 0 {
        return Err(BytesError::Zero { text: text.into() });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates_parse_with_their_units() {
        assert_eq!(parse_bytes("20MB/s"), Ok(20_000_000));
        assert_eq!(parse_bytes("8MiB"), Ok(8 << 20));
        assert_eq!(parse_bytes("1.5GB"), Ok(1_500_000_000));
        assert!(matches!(
            parse_bytes("20 parsecs"),
            Err(BytesError::Unit { unit, .. }) if unit == "parsecs"
        ));
        assert!(matches!(parse_bytes("0MB/s"), Err(BytesError::Zero { .. })));
    }

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
