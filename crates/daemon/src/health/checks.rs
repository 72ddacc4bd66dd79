//! The conditions one health tick looks for, one function per alarm (the module above lists
//! them and says when each is raised): `silent`, `rate_low`/`rate_high` (and the rate a
//! sensor without `expected_hz` learns), `queue_high`, `missing`, `disk_low`, `disk_error`,
//! and the `clock_step` (`offset`) event of a driver's clock. Each returns what it found;
//! [`Health::tick`](super::Health) debounces and raises them.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::{Found, Health, Offset, CLOCK_STEP_HOLD, MIN_SILENT};
use crate::disk_fault::Fault;
use crate::events::{ClockStepKind, Event, EventLog};
use crate::slot::Slot;

/// A sensor's rates over the rate window at one tick.
pub(super) struct Measured {
    /// Frames received per second.
    pub rate: f64,
    /// Whether the window is (nearly) whole: a rate over less is not judged.
    pub full: bool,
    /// Bytes received per second, once the window is whole.
    pub byte_rate: Option<f64>,
}

/// One `disk_error` per failed write or fsync not yet over.
pub(super) fn disk_errors(faults: &[Fault]) -> Vec<Found> {
    faults
        .iter()
        .map(|f| ("disk_error".into(), f.sensor.clone(), f.details()))
        .collect()
}

impl Health {
    /// Adds this tick's counts of `s` to its history and measures its rates over the
    /// window.
    pub(super) fn measure(&mut self, s: &Slot, now: Instant) -> Measured {
        let window = self.cfg.health.rate_window;
        let st = &s.stats;
        let (samples, bytes) = (st.received.load(Relaxed), st.bytes.load(Relaxed));
        let h = self.history.entry(s.name.clone()).or_default();
        h.push_back((now, samples, bytes));
        while h.len() > 2 && now.duration_since(h[1].0) >= window {
            h.pop_front();
        }
        let (t0, n0, b0) = h[0];
        let dt = now.duration_since(t0).as_secs_f64();
        let full = dt >= window.as_secs_f64() * 0.9;
        let rate = if dt > 0.0 {
            samples.saturating_sub(n0) as f64 / dt
        } else {
            0.0
        };
        Measured {
            rate,
            full,
            byte_rate: full.then(|| bytes.saturating_sub(b0) as f64 / dt),
        }
    }

    /// A sensor without `expected_hz` that sent at a non-zero rate for `learn_rate_ms`
    /// without a pause gets the rate measured then as its expectation.
    pub(super) fn learn_rate(&mut self, s: &Slot, m: &Measured, now: Instant) {
        let configured = self
            .cfg
            .health
            .sensors
            .get(&s.name)
            .and_then(|c| c.expected_hz)
            .is_some();
        if configured || self.learned.contains_key(&s.name) {
            return;
        }
        if s.stats.connected.load(Relaxed) && m.full && m.rate > 0.0 {
            let since = *self.steady_since.entry(s.name.clone()).or_insert(now);
            if now.duration_since(since) >= self.cfg.health.learn_rate {
                let hz = (m.rate * 100.0).round() / 100.0;
                tracing::info!(sensor = %s.name, expected_hz = hz, "learned the sensor's rate");
                self.learned.insert(s.name.clone(), hz);
            }
        } else {
            self.steady_since.remove(&s.name);
        }
    }

    /// `silent`: no frame for `silent_periods` expected periods of `hz`, and at least
    /// [`MIN_SILENT`] (`now_ms`: the clock of the slot's `last_frame_ms`).
    pub(super) fn silent(&self, s: &Slot, hz: f64, now_ms: u64) -> Option<Found> {
        let bound = ((self.cfg.health.silent_periods / hz * 1000.0) as u64)
            .max(MIN_SILENT.as_millis() as u64);
        let last = s.stats.last_frame_ms.load(Relaxed);
        if last == u64::MAX {
            return None;
        }
        let quiet = now_ms.saturating_sub(last);
        (quiet > bound).then(|| {
            (
                "silent".into(),
                s.name.clone(),
                json!({"expected_hz": hz, "silent_ms": quiet}),
            )
        })
    }

    /// `rate_low`/`rate_high`: the rate is outside `expected` (hz, tolerance), judged only
    /// while connected, not `silent`, and once a whole window lies after the last pause.
    pub(super) fn rate(
        &mut self,
        s: &Slot,
        m: &Measured,
        (hz, tol): (f64, f64),
        silent: bool,
        now: Instant,
    ) -> Option<Found> {
        let connected = s.stats.connected.load(Relaxed);
        if silent || !connected {
            self.quiet_at.insert(s.name.clone(), now);
        }
        let window = self.cfg.health.rate_window;
        let settled = self
            .quiet_at
            .get(&s.name)
            .is_none_or(|&q| now.duration_since(q) >= window);
        if !(connected && m.full && !silent && settled) {
            return None;
        }
        let rate = m.rate;
        let detail =
            json!({"expected_hz": hz, "tolerance": tol, "rate_hz": (rate * 100.0).round() / 100.0});
        if rate < hz * (1.0 - tol) {
            Some(("rate_low".into(), s.name.clone(), detail))
        } else if rate > hz * (1.0 + tol) {
            Some(("rate_high".into(), s.name.clone(), detail))
        } else {
            None
        }
    }

    /// The `clock_step` event (kind `offset`) when the sensor's median clock offset moved
    /// past `clock_step_threshold_s`, at most one per [`CLOCK_STEP_HOLD`] (moves coalesced).
    pub(super) fn clock_offset(&mut self, s: &Slot, now: Instant, events: &Arc<EventLog>) {
        let Some((median, _)) = s.stats.clock() else {
            return;
        };
        let threshold = self.cfg.health.clock_step_threshold_s;
        let o = self.offsets.entry(s.name.clone()).or_insert(Offset {
            last: median,
            reported: median,
            at: None,
            moves: 0,
        });
        if (median - o.last).abs() > threshold {
            o.moves += 1;
            o.last = median;
        }
        let held =
            o.at.is_none_or(|a| now.duration_since(a) >= CLOCK_STEP_HOLD);
        if o.moves > 0 && held {
            tracing::warn!(sensor = %s.name, from = o.reported, to = median, moves = o.moves, "the driver's clock moved against the daemon's");
            events.write(Event::ClockStep {
                sensor: s.name.clone(),
                frame: None,
                kind: Some(ClockStepKind::Offset),
                from: o.reported,
                to: median,
                moves: Some(o.moves),
            });
            o.reported = median;
            o.at = Some(now);
            o.moves = 0;
        }
    }

    /// `queue_high`: the sensor's queue holds more than `queue_high_fraction` of its budget.
    pub(super) fn queue_high(&self, s: &Slot) -> Option<Found> {
        let fill = s.queue_fill();
        let limit = s.stats.queue_limit;
        (fill as f64 > self.cfg.health.queue_high_fraction * limit as f64).then(|| {
            (
                "queue_high".into(),
                s.name.clone(),
                json!({"queue_bytes": fill, "queue_limit": limit}),
            )
        })
    }

    /// `missing`: a `required` sensor is not connected `missing_after_ms` after the
    /// recording started (`since`).
    pub(super) fn missing(&self, slots: &[Arc<Slot>], now: Instant, since: Instant) -> Vec<Found> {
        let after = self.cfg.health.missing_after;
        if now.duration_since(since) < after {
            return Vec::new();
        }
        self.cfg
            .health
            .sensors
            .iter()
            .filter(|(name, c)| {
                c.required
                    && !slots
                        .iter()
                        .any(|s| &s.name == *name && s.stats.connected.load(Relaxed))
            })
            .map(|(name, _)| {
                (
                    "missing".into(),
                    name.clone(),
                    json!({"missing_after_ms": after.as_millis() as u64}),
                )
            })
            .collect()
    }

    /// `disk_low`: the free space above `min_free_bytes` lasts less than `disk_low_seconds`
    /// at `bytes_per_s` (all sensors; `None` while one has no whole rate window yet).
    pub(super) fn disk_low(&self, free: Option<u64>, bytes_per_s: Option<f64>) -> Option<Found> {
        let (free, rate) = (free?, bytes_per_s.filter(|&r| r > 0.0)?);
        // The disk guard stops recording at `min_free_bytes`: the time left is to there.
        let min_free = self.cfg.recording.min_free_bytes;
        let left = free.saturating_sub(min_free) as f64 / rate;
        (left < self.cfg.health.disk_low.as_secs_f64()).then(|| {
            (
                "disk_low".into(),
                String::new(),
                json!({"free_bytes": free, "min_free_bytes": min_free, "bytes_per_s": rate.round(), "seconds_left": left.round()}),
            )
        })
    }
}
