//! Per-sensor counters, shared lock-free between a sensor's connection task (drops, gaps,
//! queue fill), its writer thread (samples, bytes, durable watermark, fsync time) and the
//! status command / stats log line, which read them.
//!
//! Counters of the current trace (`samples`, `bytes`, `durable`) are set by the writer when it
//! opens a trace; `drops`, `gaps`, `repeats`, `clock_steps`, `discarded`, `lzmaf_stored` count
//! since the daemon started.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::failure::SensorFailure;
use crate::poison::LockExt;

/// Frames the clock offset and jitter are computed over.
const CLOCK_WINDOW: usize = 1000;

/// Counters of one sensor.
pub struct SensorStats {
    /// The queue's byte budget.
    pub queue_limit: u64,
    /// Samples in the current trace's files (appended by the writer; buffered ones included).
    pub samples: AtomicU64,
    /// Sample bytes appended in the current trace: 8 per timestamp plus every channel's
    /// bytes as received (before `lzmaf` compression), so for `raw`/`jpg` sensors the sum of
    /// the channel files' sizes.
    pub bytes: AtomicU64,
    /// Samples known to be on disk (fsynced) in the current trace.
    pub durable: AtomicU64,
    /// Milliseconds since daemon start of the last fsync; `u64::MAX` for never.
    pub last_fsync_ms: AtomicU64,
    /// Frames dropped because the queue was full (`drop` policy).
    pub drops: AtomicU64,
    /// Samples missing according to the sequence numbers.
    pub gaps: AtomicU64,
    /// Frames dropped as repeats of sequence numbers already written in the trace (`dedup`).
    pub repeats: AtomicU64,
    /// Times `ts` went backwards.
    pub clock_steps: AtomicU64,
    /// Frames received while no trace was recording (or after the sensor failed).
    pub discarded: AtomicU64,
    /// Frames that fell out of the snapshot ring and never reached a trace (see `snapshot`).
    pub snapshot_dropped: AtomicU64,
    /// Samples whose `lzmaf` channels were stored uncompressed because compression fell
    /// behind (config `lzmaf_store_above`).
    pub lzmaf_stored: AtomicU64,
    /// Highest queue fill seen, bytes.
    pub queue_high_water: AtomicU64,
    pub connected: AtomicBool,
    /// Why the sensor failed (a write or fsync error); `None` while healthy.
    pub failed: Mutex<Option<Arc<SensorFailure>>>,
    /// Milliseconds since daemon start when the writer last proved progress (a loop turn, a
    /// sample appended, a flush or fsync done); the watchdog pings only while every writer's
    /// beat is recent.
    pub heartbeat_ms: AtomicU64,
    /// Milliseconds since daemon start when the last frame arrived; `u64::MAX`: none yet.
    pub last_frame_ms: AtomicU64,
    /// Frames received from the driver since the daemon started, whether or not a trace was
    /// recording and whether or not they were kept: what the sensor sends. Rates (`status`
    /// `rate_hz`, the health alarms) are measured on it, so trace boundaries (`samples`
    /// restarts at 0 in a new trace) and snapshot-ring frames written into a trace at once do
    /// not look like a rate change.
    pub received: AtomicU64,
    /// The last driver-vs-daemon clock offsets (receive time minus `ts`), seconds.
    clock: Mutex<std::collections::VecDeque<f64>>,
    /// Frames received at the last rate computation, and the rate then (f64 bits).
    rate_base: Mutex<(u64, Instant)>,
    rate_bits: AtomicU64,
}

impl SensorStats {
    /// Fresh counters for a queue of `queue_limit` bytes.
    pub fn new(queue_limit: u64) -> SensorStats {
        SensorStats {
            queue_limit,
            samples: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            durable: AtomicU64::new(0),
            last_fsync_ms: AtomicU64::new(u64::MAX),
            drops: AtomicU64::new(0),
            gaps: AtomicU64::new(0),
            repeats: AtomicU64::new(0),
            clock_steps: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            snapshot_dropped: AtomicU64::new(0),
            lzmaf_stored: AtomicU64::new(0),
            queue_high_water: AtomicU64::new(0),
            connected: AtomicBool::new(false),
            failed: Mutex::new(None),
            heartbeat_ms: AtomicU64::new(0),
            last_frame_ms: AtomicU64::new(u64::MAX),
            received: AtomicU64::new(0),
            clock: Mutex::new(std::collections::VecDeque::with_capacity(CLOCK_WINDOW)),
            rate_base: Mutex::new((0, Instant::now())),
            rate_bits: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Notes one frame's clock offset (daemon receive time minus the frame's `ts`).
    pub fn note_clock(&self, offset: f64) {
        if !offset.is_finite() {
            return;
        }
        let mut c = self.clock.lock_or_recover();
        if c.len() == CLOCK_WINDOW {
            c.pop_front();
        }
        c.push_back(offset);
    }

    /// The median offset and the jitter (p99 - p50) over the last frames, seconds.
    pub fn clock(&self) -> Option<(f64, f64)> {
        let mut v: Vec<f64> = self.clock.lock_or_recover().iter().copied().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        Some((q(0.5), q(0.99) - q(0.5)))
    }

    /// Why the sensor failed, if it did.
    pub fn failure(&self) -> Option<Arc<SensorFailure>> {
        self.failed.lock_or_recover().clone()
    }

    /// Records a failure (the first one wins).
    pub fn set_failed(&self, failure: Arc<SensorFailure>) {
        let mut f = self.failed.lock_or_recover();
        if f.is_none() {
            *f = Some(failure);
        }
    }

    /// Clears the failure (a new trace opens new files).
    pub fn clear_failed(&self) {
        *self.failed.lock_or_recover() = None;
    }

    /// Records a heartbeat now (`epoch`: the daemon's start).
    pub fn beat(&self, epoch: Instant) {
        self.heartbeat_ms
            .store(epoch.elapsed().as_millis() as u64, Relaxed);
    }

    /// Milliseconds since the last heartbeat, at `now_ms` since the daemon's start.
    pub fn heartbeat_age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.heartbeat_ms.load(Relaxed))
    }

    /// Notes the queue fill after a frame was queued.
    pub fn note_fill(&self, fill: u64) {
        self.queue_high_water.fetch_max(fill, Relaxed);
    }

    /// Recomputes the rate the sensor sends at from the frames received since the last call
    /// (recording or not); returns it.
    pub fn update_rate(&self) -> f64 {
        let now = Instant::now();
        let samples = self.received.load(Relaxed);
        let mut base = self.rate_base.lock_or_recover();
        let dt = now.duration_since(base.1).as_secs_f64();
        let rate = if dt > 0.0 && samples >= base.0 {
            (samples - base.0) as f64 / dt
        } else {
            0.0
        };
        *base = (samples, now);
        self.rate_bits.store(rate.to_bits(), Relaxed);
        rate
    }

    /// This sensor's counters as `status` shows them. `queue_fill` is read from the queue's
    /// semaphore by the caller; `now_ms` is milliseconds since daemon start.
    pub fn counters(&self, queue_fill: u64, now_ms: u64) -> SensorCounters {
        let last = self.last_fsync_ms.load(Relaxed);
        let clock = self.clock();
        let connected = self.connected.load(Relaxed);
        // A sensor without a connection sends nothing: not the rate it had when it left.
        let rate = if connected {
            f64::from_bits(self.rate_bits.load(Relaxed))
        } else {
            0.0
        };
        SensorCounters {
            connected,
            failed: self.failure().map(|f| f.to_string()),
            samples: self.samples.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            rate_hz: (rate * 100.0).round() / 100.0,
            queue_bytes: queue_fill,
            queue_high_water: self.queue_high_water.load(Relaxed),
            queue_limit: self.queue_limit,
            drops: self.drops.load(Relaxed),
            gaps: self.gaps.load(Relaxed),
            repeats: self.repeats.load(Relaxed),
            clock_steps: self.clock_steps.load(Relaxed),
            discarded: self.discarded.load(Relaxed),
            snapshot_dropped: self.snapshot_dropped.load(Relaxed),
            durable: self.durable.load(Relaxed),
            last_fsync_age_ms: (last != u64::MAX).then(|| now_ms.saturating_sub(last)),
            clock_offset_s: clock.map(|c| c.0),
            clock_jitter_s: clock.map(|c| c.1),
            lzmaf_stored: self.lzmaf_stored.load(Relaxed),
        }
    }
}

/// One sensor's counters in `status` (docs/protocol.md lists what each means).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SensorCounters {
    pub connected: bool,
    pub failed: Option<String>,
    pub samples: u64,
    pub bytes: u64,
    pub rate_hz: f64,
    pub queue_bytes: u64,
    pub queue_high_water: u64,
    pub queue_limit: u64,
    pub drops: u64,
    pub gaps: u64,
    pub repeats: u64,
    pub clock_steps: u64,
    pub discarded: u64,
    pub snapshot_dropped: u64,
    pub durable: u64,
    pub last_fsync_age_ms: Option<u64>,
    pub clock_offset_s: Option<f64>,
    pub clock_jitter_s: Option<f64>,
    /// Added after the others (the key order is the protocol's).
    pub lzmaf_stored: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disconnected_sensor_shows_no_rate_not_its_last_one() {
        let s = SensorStats::new(1000);
        s.connected.store(true, Relaxed);
        s.update_rate();
        std::thread::sleep(std::time::Duration::from_millis(20));
        s.received.store(100, Relaxed);
        assert!(s.update_rate() > 0.0);
        assert!(s.counters(0, 0).rate_hz > 0.0);
        s.connected.store(false, Relaxed);
        assert_eq!(s.counters(0, 0).rate_hz, 0.0);
    }
}
