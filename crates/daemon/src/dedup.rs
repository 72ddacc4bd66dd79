//! [`SeqSeen`]: which sequence numbers a sensor has written in the open trace, so that a
//! frame a driver sends again (a resend after a reconnect) is recognised and dropped instead
//! of being written twice (docs/protocol.md 4.2, the hello's opt-in `dedup`).
//!
//! The numbers are kept as runs of consecutive sequence numbers, each with the span of
//! sample times (`ts`) its frames had. A frame **repeats** one already written when its
//! sequence number lies in a run and its `ts` lies in that run's span: a resent frame carries
//! both unchanged, while a driver whose counter restarted at 0 sends later times and is not
//! taken for a repeat. At most [`MAX_RUNS`] runs are kept (a run ends at every gap or reset);
//! the oldest are forgotten first, so memory stays bounded whatever the driver sends.
//!
//! The memory is the daemon process's: it starts empty when the trace is opened (or resumed
//! after a crash) and with each new trace. What a driver must not resend after a crash, the
//! hello reply's `samples` tells it (docs/protocol.md 7). A connection keys its frames by the
//! recorder's open trace, which a rotation switches a moment before each writer does: the
//! few frames in flight then count for the new part though written at the end of the old.

use std::collections::VecDeque;
use std::time::Instant;

/// Runs of sequence numbers kept per sensor.
pub const MAX_RUNS: usize = 256;

/// Consecutive sequence numbers `lo ..= hi`, written with sample times `ts_lo ..= ts_hi`.
#[derive(Debug, Clone, Copy)]
struct Run {
    lo: u64,
    hi: u64,
    ts_lo: f64,
    ts_hi: f64,
}

/// One sensor's written sequence numbers in one trace (see the module doc).
#[derive(Debug, Default)]
pub struct SeqSeen {
    /// When the trace they were written in was opened: another value means another trace.
    trace: Option<Instant>,
    runs: VecDeque<Run>,
}

impl SeqSeen {
    /// Forgets the runs of any trace but `trace`.
    fn enter(&mut self, trace: Instant) {
        if self.trace != Some(trace) {
            self.trace = Some(trace);
            self.runs.clear();
        }
    }

    /// Whether a frame `(seq, ts)` repeats one this sensor wrote in `trace` (the open trace,
    /// identified by when it was opened).
    pub fn is_repeat(&mut self, trace: Instant, seq: u64, ts: f64) -> bool {
        self.enter(trace);
        // Newest first: a resend repeats what was written last.
        self.runs
            .iter()
            .rev()
            .any(|r| (r.lo..=r.hi).contains(&seq) && r.ts_lo <= ts && ts <= r.ts_hi)
    }

    /// Notes that frame `(seq, ts)` goes to `trace`'s files.
    pub fn written(&mut self, trace: Instant, seq: u64, ts: f64) {
        self.enter(trace);
        if let Some(r) = self.runs.back_mut() {
            if r.hi.checked_add(1) == Some(seq) {
                r.hi = seq;
                r.ts_lo = r.ts_lo.min(ts);
                r.ts_hi = r.ts_hi.max(ts);
                return;
            }
        }
        if self.runs.len() == MAX_RUNS {
            self.runs.pop_front();
        }
        self.runs.push_back(Run {
            lo: seq,
            hi: seq,
            ts_lo: ts,
            ts_hi: ts,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resend_repeats_and_a_restarted_counter_does_not() {
        let t0 = Instant::now();
        let mut s = SeqSeen::default();
        for i in 0..100u64 {
            assert!(!s.is_repeat(t0, i, 10.0 + i as f64));
            s.written(t0, i, 10.0 + i as f64);
        }
        // The same frames again (a resend): repeats.
        assert!(s.is_repeat(t0, 0, 10.0));
        assert!(s.is_repeat(t0, 99, 109.0));
        // The next frame, and a counter restarted at 0 with later times: new.
        assert!(!s.is_repeat(t0, 100, 110.0));
        assert!(!s.is_repeat(t0, 0, 500.0));
        s.written(t0, 0, 500.0);
        assert!(s.is_repeat(t0, 0, 500.0));
        assert!(s.is_repeat(t0, 5, 15.0), "the earlier run is still known");
        // Another trace knows nothing of this one.
        let t1 = t0 + std::time::Duration::from_secs(1);
        assert!(!s.is_repeat(t1, 5, 15.0));
        assert!(!s.is_repeat(t0, 5, 15.0), "and the old trace is forgotten");
    }

    #[test]
    fn runs_end_at_gaps_and_are_bounded() {
        let t0 = Instant::now();
        let mut s = SeqSeen::default();
        for k in 0..(MAX_RUNS as u64 + 10) {
            // Every other number: each frame is a run of its own.
            s.written(t0, 2 * k, k as f64);
        }
        assert_eq!(s.runs.len(), MAX_RUNS);
        assert!(!s.is_repeat(t0, 0, 0.0), "the oldest runs are forgotten");
        let last = MAX_RUNS as u64 + 9;
        assert!(s.is_repeat(t0, 2 * last, last as f64));
        assert!(
            !s.is_repeat(t0, 2 * last - 1, last as f64),
            "a gap is not written"
        );
        assert!(!s.is_repeat(t0, u64::MAX, 0.0));
        s.written(t0, u64::MAX, 1.0);
        s.written(t0, 0, 2.0);
        assert!(s.is_repeat(t0, u64::MAX, 1.0));
    }
}
