//! A buffer's timestamp as epoch time. V4L2 stamps a buffer on the clock its flags name:
//! `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC` (uvcvideo, and every driver of the last decade) is
//! `CLOCK_MONOTONIC`, which has no fixed relation to the epoch. The offset between the two
//! clocks is sampled: `CLOCK_REALTIME` read between two `CLOCK_MONOTONIC` reads, three
//! times, the narrowest bracket kept, offset = realtime - the bracket's middle. It is
//! sampled again every [`RESAMPLE`], so a clock that NTP slews (or steps) is followed within
//! that time; between samples a frame's epoch time is its monotonic stamp + the offset,
//! which keeps the frames' spacing exactly the camera's. A buffer on another clock
//! (`TIMESTAMP_COPY`, `UNKNOWN`) or with a zero stamp is stamped at dequeue.

use std::time::{Duration, Instant};

use super::sys;

/// How often the monotonic-to-epoch offset is sampled again.
pub const RESAMPLE: Duration = Duration::from_secs(10);

fn clock(id: libc::clockid_t) -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec; the clocks used here always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `CLOCK_MONOTONIC` now (what a V4L2 driver stamps buffers with).
pub fn monotonic_now() -> Duration {
    clock(libc::CLOCK_MONOTONIC)
}

/// Maps buffer timestamps to epoch seconds (see the module doc).
#[derive(Debug)]
pub struct EpochClock {
    /// Epoch seconds minus monotonic seconds.
    offset: f64,
    sampled: Instant,
}

impl Default for EpochClock {
    fn default() -> Self {
        EpochClock {
            offset: sample_offset(),
            sampled: Instant::now(),
        }
    }
}

impl EpochClock {
    /// The offset in use: epoch seconds = monotonic seconds + this.
    pub fn offset(&self) -> f64 {
        self.offset
    }

    /// The epoch time of a buffer stamped `timestamp` with `flags`.
    pub fn epoch(&mut self, flags: u32, timestamp: Duration) -> f64 {
        let monotonic = flags & sys::V4L2_BUF_FLAG_TIMESTAMP_MASK
            == sys::V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC
            && !timestamp.is_zero();
        if !monotonic {
            return crate::epoch_now();
        }
        if self.sampled.elapsed() >= RESAMPLE {
            self.offset = sample_offset();
            self.sampled = Instant::now();
        }
        timestamp.as_secs_f64() + self.offset
    }
}

/// Epoch minus monotonic seconds, from the narrowest of three brackets.
fn sample_offset() -> f64 {
    let mut best: Option<(Duration, f64)> = None;
    for _ in 0..3 {
        let before = monotonic_now();
        let real = clock(libc::CLOCK_REALTIME);
        let after = monotonic_now();
        let width = after.saturating_sub(before);
        let middle = (before.as_secs_f64() + after.as_secs_f64()) / 2.0;
        let offset = real.as_secs_f64() - middle;
        if best.is_none_or(|(w, _)| width < w) {
            best = Some((width, offset));
        }
    }
    best.map_or(0.0, |(_, o)| o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_monotonic_stamp_maps_to_the_epoch_and_others_are_stamped_at_dequeue() {
        let mut c = EpochClock::default();
        let mono = monotonic_now();
        let now = crate::epoch_now();
        let got = c.epoch(sys::V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC, mono);
        assert!((got - now).abs() < 0.01, "{got} vs {now}");
        // A frame stamped 1.5 s earlier is 1.5 s earlier in epoch time, exactly.
        let earlier = c.epoch(
            sys::V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC,
            mono - Duration::from_millis(1500),
        );
        assert!((got - earlier - 1.5).abs() < 1e-6, "{got} {earlier}");
        // TIMESTAMP_COPY (0x4000): not the monotonic clock, so stamped now.
        let copied = c.epoch(0x4000 | 0x1, Duration::from_secs(5));
        assert!((copied - crate::epoch_now()).abs() < 0.01, "{copied}");
        let zero = c.epoch(sys::V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC, Duration::ZERO);
        assert!((zero - crate::epoch_now()).abs() < 0.01, "{zero}");
    }
}
