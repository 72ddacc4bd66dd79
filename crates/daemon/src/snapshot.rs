//! Pre-trigger snapshots: while no trace is open and `snapshot` is on, every sensor's
//! received batches are kept in one memory ring instead of being discarded, so a trace
//! started by `trigger` (or `start`) begins with the last `pre_trigger_seconds` before it.
//!
//! The ring is shared by all sensors and bounded by `snapshot_bytes`: the oldest batch (of
//! any sensor) goes first, and so does every batch older than `pre_trigger_seconds`. Each
//! dropped batch's frames are counted in its sensor's `snapshot_dropped` (status), exactly.
//! Writers push to it in their own thread (the ring is the same order as their queue) and,
//! when a trace opens, take their sensor's batches out and write them before any frame that
//! was queued after the switch: nothing is reordered or lost between the ring and the trace.
//!
//! The unit of the ring is a queue batch (the frames one read brought, usually one frame for
//! a sensor sending at a steady rate), timed by its arrival at the writer.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::poison::LockExt;
use crate::stats::SensorStats;

/// Which trace the last `trigger` started, that trigger's number and when its trace stops: a
/// later trigger moves the stop of its trace, a rotation carries it into the next part. The
/// recorder is given this handle; the `trigger` operation itself is `Recorder::trigger`.
#[derive(Default)]
pub struct Triggers(Mutex<Option<Trigger>>);

/// The last trigger.
struct Trigger {
    trace: String,
    n: u64,
    /// When its trace stops (the trigger's time plus its `after`).
    stop_at: Instant,
}

impl Triggers {
    /// A trigger while `current` records, to stop it at `stop_at`: the trigger's number when
    /// `current` was started by a trigger (its stop moves), `None` when it was not.
    pub fn extend(&self, current: &str, stop_at: Instant) -> Option<u64> {
        match self.0.lock_or_recover().as_mut() {
            Some(t) if t.trace == current => {
                t.n += 1;
                t.stop_at = stop_at;
                Some(t.n)
            }
            _ => None,
        }
    }

    /// A trigger started `trace`, to stop it at `stop_at`; its number.
    pub fn started(&self, trace: String, stop_at: Instant) -> u64 {
        let mut t = self.0.lock_or_recover();
        let n = t.as_ref().map_or(0, |t| t.n + 1);
        *t = Some(Trigger { trace, n, stop_at });
        n
    }

    /// Whether trigger `n` is still the last one and its trace (or the part a rotation
    /// continued it in) is `current`.
    pub fn still(&self, n: u64, current: Option<&str>) -> bool {
        self.0
            .lock_or_recover()
            .as_ref()
            .is_some_and(|t| t.n == n && current == Some(t.trace.as_str()))
    }

    /// A rotation continued `old` in `new`: a triggered trace's stop follows it.
    pub fn rotated(&self, old: &str, new: &str) {
        if let Some(t) = self.0.lock_or_recover().as_mut().filter(|t| t.trace == old) {
            t.trace = new.to_string();
        }
    }

    /// Seconds from `now` until `current` stops by its trigger's `after` (`None`: `current`
    /// was not started by a trigger).
    pub fn stops_in(&self, current: Option<&str>, now: Instant) -> Option<f64> {
        self.0
            .lock_or_recover()
            .as_ref()
            .filter(|t| current == Some(t.trace.as_str()))
            .map(|t| t.stop_at.saturating_duration_since(now).as_secs_f64())
    }
}

/// What the ring holds now (`status` `snapshot`).
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotStatus {
    pub enabled: bool,
    pub bytes: u64,
    pub frames: u64,
    pub dropped_frames: u64,
    pub snapshot_bytes: u64,
    pub pre_trigger_seconds: f64,
    /// How many seconds back the ring reaches now (the age of its oldest batch; 0 when empty).
    pub held_seconds: f64,
    /// Seconds until the recording trace stops by itself, when a `trigger` started it
    /// (`null` otherwise); set by the recorder, which knows the triggers.
    pub trigger_stops_in_s: Option<f64>,
}

/// One batch held for a possible trigger.
pub struct Held {
    pub sensor: String,
    pub at: Instant,
    pub data: bytes::Bytes,
    pub frames: u32,
    pub seq: bool,
    pub recv: Vec<f64>,
    pub stats: Arc<SensorStats>,
}

impl Held {
    fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    fn drop_counted(self) {
        self.stats
            .snapshot_dropped
            .fetch_add(u64::from(self.frames), Relaxed);
    }
}

#[derive(Default)]
struct Inner {
    q: VecDeque<Held>,
    bytes: u64,
    /// Frames dropped from the ring since the daemon started, all sensors (also those whose
    /// sensor is gone from `status`).
    dropped: u64,
}

/// The ring (see the module's documentation).
pub struct SnapshotRing {
    /// Config `snapshot`, switched by `{"cmd": "snapshot"}`.
    enabled: std::sync::atomic::AtomicBool,
    limit: u64,
    keep: Duration,
    inner: Mutex<Inner>,
}

impl SnapshotRing {
    pub fn new(enabled: bool, limit: u64, keep: Duration) -> SnapshotRing {
        SnapshotRing {
            enabled: enabled.into(),
            limit,
            keep,
            inner: Mutex::default(),
        }
    }

    /// Whether batches received while no trace is open are kept.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// Switches the mode; switching it off drops (counted) what the ring holds.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
        if !on {
            let mut inner = self.lock();
            let all: Vec<Held> = inner.q.drain(..).collect();
            inner.bytes = 0;
            for h in all {
                inner.dropped += u64::from(h.frames);
                h.drop_counted();
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock_or_recover()
    }

    /// Drops (counted) what is older than the window at `now` or over the byte bound.
    fn evict(&self, inner: &mut Inner, now: Instant) {
        while let Some(front) = inner.q.front() {
            let old = now.saturating_duration_since(front.at) > self.keep;
            if !old && inner.bytes <= self.limit {
                break;
            }
            let h = inner.q.pop_front().expect("front exists");
            inner.bytes -= h.bytes();
            inner.dropped += u64::from(h.frames);
            h.drop_counted();
        }
    }

    /// Keeps `h`, dropping the oldest batches as the bounds require (possibly `h` itself when
    /// it alone is over `snapshot_bytes`).
    pub fn push(&self, h: Held) {
        let mut inner = self.lock();
        let now = h.at;
        inner.bytes += h.bytes();
        inner.q.push_back(h);
        self.evict(&mut inner, now);
    }

    /// Takes out `sensor`'s batches still in the window, oldest first.
    pub fn take(&self, sensor: &str) -> Vec<Held> {
        let mut inner = self.lock();
        self.evict(&mut inner, Instant::now());
        let (mine, rest): (VecDeque<Held>, VecDeque<Held>) =
            inner.q.drain(..).partition(|h| h.sensor == sensor);
        inner.bytes = rest.iter().map(Held::bytes).sum();
        inner.q = rest;
        mine.into()
    }

    /// Drops (counted) every batch of `sensor`: its writer ends (the driver left while no
    /// trace was open), and a later connection of that name may lay its frames out otherwise.
    pub fn discard(&self, sensor: &str) {
        let mut inner = self.lock();
        let (gone, rest): (VecDeque<Held>, VecDeque<Held>) =
            inner.q.drain(..).partition(|h| h.sensor == sensor);
        inner.bytes = rest.iter().map(Held::bytes).sum();
        inner.q = rest;
        for h in gone {
            inner.dropped += u64::from(h.frames);
            h.drop_counted();
        }
    }

    /// For `status`: what the ring holds now.
    pub fn status(&self) -> SnapshotStatus {
        let mut inner = self.lock();
        let now = Instant::now();
        self.evict(&mut inner, now);
        SnapshotStatus {
            enabled: self.enabled(),
            bytes: inner.bytes,
            frames: inner.q.iter().map(|h| u64::from(h.frames)).sum::<u64>(),
            dropped_frames: inner.dropped,
            snapshot_bytes: self.limit,
            pre_trigger_seconds: self.keep.as_secs_f64(),
            held_seconds: inner.q.front().map_or(0.0, |h| {
                (now.saturating_duration_since(h.at).as_secs_f64() * 10.0).round() / 10.0
            }),
            trigger_stops_in_s: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(sensor: &str, at: Instant, n: usize, stats: &Arc<SensorStats>) -> Held {
        Held {
            sensor: sensor.into(),
            at,
            data: bytes::Bytes::from(vec![0u8; n]),
            frames: 2,
            seq: false,
            recv: Vec::new(),
            stats: stats.clone(),
        }
    }

    #[test]
    fn oldest_of_any_sensor_goes_first_and_every_drop_is_counted() {
        let (a, b) = (Arc::new(SensorStats::new(0)), Arc::new(SensorStats::new(0)));
        let ring = SnapshotRing::new(true, 100, Duration::from_secs(60));
        let t = Instant::now();
        ring.push(held("a", t, 40, &a));
        ring.push(held("b", t, 40, &b));
        ring.push(held("b", t, 40, &b)); // 120 > 100: a's batch goes
        assert_eq!(a.snapshot_dropped.load(Relaxed), 2);
        assert_eq!(b.snapshot_dropped.load(Relaxed), 0);
        ring.push(held("a", t, 500, &a)); // over the bound alone: everything goes
        assert_eq!(a.snapshot_dropped.load(Relaxed), 4);
        assert_eq!(b.snapshot_dropped.load(Relaxed), 4);
        assert_eq!(ring.status().bytes, 0);
    }

    #[test]
    fn take_returns_one_sensors_batches_in_order_and_leaves_the_rest() {
        let s = Arc::new(SensorStats::new(0));
        let ring = SnapshotRing::new(true, 1000, Duration::from_secs(60));
        let t = Instant::now();
        for (k, name) in ["a", "b", "a"].iter().enumerate() {
            ring.push(held(name, t, 10 + k, &s));
        }
        let a: Vec<usize> = ring.take("a").iter().map(|h| h.data.len()).collect();
        assert_eq!(a, [10, 12]);
        assert_eq!(ring.status().bytes, 11);
        assert_eq!(s.snapshot_dropped.load(Relaxed), 0);
        ring.discard("b");
        assert_eq!(ring.status().bytes, 0);
        assert_eq!(ring.status().dropped_frames, 2);
        assert_eq!(s.snapshot_dropped.load(Relaxed), 2);
    }

    #[test]
    fn batches_older_than_the_window_are_dropped_and_counted() {
        let s = Arc::new(SensorStats::new(0));
        let ring = SnapshotRing::new(true, 1000, Duration::from_millis(50));
        ring.push(held(
            "a",
            Instant::now() - Duration::from_millis(200),
            10,
            &s,
        ));
        ring.push(held("a", Instant::now(), 10, &s));
        assert_eq!(s.snapshot_dropped.load(Relaxed), 2);
        assert_eq!(ring.take("a").len(), 1);
    }
}
