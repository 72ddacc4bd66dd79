//! The dashboard's memory of the last minutes: one point a second of every sensor's rate and
//! of the bytes received per second, so a page opened mid-drive draws its sparklines at once,
//! and the disk's time left at the pace the trace takes disk space (`disk_use`).
//!
//! Sampled from `Recorder::status` (the same numbers `ctl status` shows) by one task that
//! runs only when the dashboard is on; writers never see it. A sensor that is not connected
//! has no rate at that point (`null`, drawn as a gap), not a rate of 0.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::disk_use::{self, Consumption};
use crate::poison::LockExt;
use crate::recording::{Recorder, Status};
use crate::shutdown::Shutdown;

/// Points kept: five minutes at one a second.
pub const POINTS: usize = 300;
pub const INTERVAL: Duration = Duration::from_secs(1);
/// `write_bytes_per_s` is the mean over this many points.
const RATE_POINTS: usize = 10;

#[derive(Default)]
pub struct History {
    inner: Mutex<Series>,
}

#[derive(Default)]
struct Series {
    /// Epoch seconds of each point.
    t: VecDeque<f64>,
    /// Per sensor, one rate per point (`None` where the sensor was not there).
    rates: BTreeMap<String, VecDeque<Option<f64>>>,
    /// Bytes received per second, all sensors together.
    bytes_per_s: VecDeque<f64>,
    /// The previous point's byte counters and when they were read.
    last: Option<(Instant, HashMap<String, u64>)>,
    free_bytes: Option<u64>,
    min_free_bytes: u64,
    /// The open trace's pace on disk.
    disk: Consumption,
}

/// What one point reads of `status`.
pub struct Point {
    /// Per sensor: its rate (`None` while not connected) and its byte counter.
    pub sensors: Vec<(String, Option<f64>, u64)>,
    pub free_bytes: Option<u64>,
    pub min_free_bytes: u64,
    /// The open trace's directory.
    pub trace_dir: Option<PathBuf>,
}

impl Point {
    pub fn of(status: &Status) -> Point {
        Point {
            sensors: status
                .sensors
                .iter()
                .map(|(n, s)| {
                    let c = &s.counters;
                    (n.clone(), c.connected.then_some(c.rate_hz), c.bytes)
                })
                .collect(),
            free_bytes: status.disk.free_bytes,
            min_free_bytes: status.disk.min_free_bytes,
            trace_dir: status.trace_dir.clone(),
        }
    }
}

impl History {
    /// Adds `point`, read at `now`.
    pub fn sample(&self, point: &Point, now: Instant, epoch_s: f64) {
        let mut s = self.inner.lock_or_recover();
        let bytes: HashMap<String, u64> = point
            .sensors
            .iter()
            .map(|(n, _, b)| (n.clone(), *b))
            .collect();
        // A sensor that left (or whose counter restarted) adds nothing rather than a negative.
        let rate = match &s.last {
            Some((then, before)) => {
                let dt = now.duration_since(*then).as_secs_f64().max(1e-3);
                let grown: u64 = bytes
                    .iter()
                    .map(|(n, b)| b.saturating_sub(*before.get(n).unwrap_or(b)))
                    .sum();
                grown as f64 / dt
            }
            None => 0.0,
        };
        s.last = Some((now, bytes));
        if s.t.len() == POINTS {
            s.t.pop_front();
            s.bytes_per_s.pop_front();
            for r in s.rates.values_mut() {
                r.pop_front();
            }
        }
        s.t.push_back(epoch_s);
        s.bytes_per_s.push_back(rate);
        let len = s.t.len();
        for (name, hz, _) in &point.sensors {
            s.rates.entry(name.clone()).or_default();
            let r = s.rates.get_mut(name).expect("inserted above");
            r.resize(len - 1, None);
            r.push_back(*hz);
        }
        for r in s.rates.values_mut() {
            r.resize(len, None);
        }
        // A sensor stays while it is in `status` or has a rate left in the window.
        let here = |n: &String| point.sensors.iter().any(|(m, _, _)| m == n);
        s.rates
            .retain(|n, r| r.iter().any(Option::is_some) || here(n));
        s.free_bytes = point.free_bytes;
        s.min_free_bytes = point.min_free_bytes;
    }

    /// Whether the open trace is due for a walk (`disk_use`) at `now`.
    pub fn disk_due(&self, now: Instant) -> bool {
        self.inner.lock_or_recover().disk.due(now)
    }

    /// Adds a walk of the open trace (`None`: nothing records) that took `took`.
    pub fn disk_reading(&self, now: Instant, trace: Option<(PathBuf, u64)>, took: Duration) {
        self.inner.lock_or_recover().disk.add(now, trace, took);
    }

    /// The series as JSON: `t`, `bytes_per_s` (received), `sensors` (name to rates), the
    /// open trace's pace on disk `disk_bytes_per_s` and the `seconds_left` until it fills the
    /// free space above `min_free_bytes` (`null` when not recording, nothing is written yet, or
    /// the free space is unknown).
    pub fn to_json(&self) -> Value {
        let s = self.inner.lock_or_recover();
        let recent: Vec<f64> = s
            .bytes_per_s
            .iter()
            .rev()
            .take(RATE_POINTS)
            .copied()
            .collect();
        let mean = recent.iter().sum::<f64>() / recent.len().max(1) as f64;
        let disk_rate = s.disk.bytes_per_s();
        let seconds_left = match (s.free_bytes, disk_rate) {
            (Some(free), Some(rate)) => {
                disk_use::seconds_left(free, s.min_free_bytes, rate).map(f64::round)
            }
            _ => None,
        };
        json!({
            "interval_s": INTERVAL.as_secs_f64(),
            "points": POINTS,
            "t": s.t,
            "bytes_per_s": s.bytes_per_s.iter().map(|b| b.round()).collect::<Vec<_>>(),
            "write_bytes_per_s": mean.round(),
            "disk_bytes_per_s": disk_rate.map(f64::round),
            "min_free_bytes": s.min_free_bytes,
            "seconds_left": seconds_left,
            "sensors": s.rates,
        })
    }
}

/// Samples `rec` into `history` every [`INTERVAL`] until shutdown.
pub async fn run(rec: Arc<Recorder>, history: Arc<History>, mut shutdown: Shutdown) {
    let mut tick = tokio::time::interval(INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.recv() => return,
        }
        let epoch_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let point = Point::of(&rec.status());
        let now = Instant::now();
        history.sample(&point, now, epoch_s);
        if history.disk_due(now) {
            let dir = point.trace_dir;
            let walked = tokio::task::spawn_blocking(move || {
                let t0 = Instant::now();
                let size = dir.and_then(|d| disk_use::allocated_bytes(&d).ok().map(|b| (d, b)));
                (size, t0.elapsed())
            })
            .await;
            if let Ok((size, took)) = walked {
                history.disk_reading(now, size, took);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(sensors: &[(&str, f64, u64)], free: u64) -> Point {
        Point {
            sensors: sensors
                .iter()
                .map(|(n, hz, b)| (n.to_string(), Some(*hz), *b))
                .collect(),
            free_bytes: Some(free),
            min_free_bytes: 0,
            trace_dir: None,
        }
    }

    #[test]
    fn series_stay_aligned_and_bounded() {
        let h = History::default();
        let t0 = Instant::now();
        h.sample(&status(&[("imu", 100.0, 0)], 1000), t0, 0.0);
        // A second sensor joins: its earlier points are empty.
        h.sample(
            &status(&[("imu", 100.0, 400), ("cam", 10.0, 0)], 1000),
            t0 + INTERVAL,
            1.0,
        );
        let j = h.to_json();
        assert_eq!(j["t"], json!([0.0, 1.0]));
        assert_eq!(j["sensors"]["imu"], json!([100.0, 100.0]));
        assert_eq!(j["sensors"]["cam"], json!([null, 10.0]));
        assert_eq!(j["bytes_per_s"], json!([0.0, 400.0]));
        // Nothing walked on disk yet: no time left.
        assert_eq!(j["seconds_left"], Value::Null);
        for i in 2..(POINTS as u64 + 10) {
            h.sample(
                &status(&[("cam", 10.0, 100 * i)], 1000),
                t0 + INTERVAL * i as u32,
                i as f64,
            );
        }
        let j = h.to_json();
        assert_eq!(j["t"].as_array().unwrap().len(), POINTS);
        assert_eq!(j["sensors"]["cam"].as_array().unwrap().len(), POINTS);
        // imu left more than POINTS seconds ago: gone.
        assert!(j["sensors"].get("imu").is_none(), "{j}");
        assert_eq!(j["write_bytes_per_s"], json!(100.0));
    }

    #[test]
    fn time_left_is_the_free_space_above_the_guard_at_the_pace_on_disk() {
        let h = History::default();
        let t0 = Instant::now();
        let mut p = status(&[("imu", 100.0, 0)], 10_000_000);
        p.min_free_bytes = 2_000_000;
        h.sample(&p, t0, 0.0);
        // 40 kB on disk in 4 s, though the driver sent nothing the byte counters saw.
        h.disk_reading(t0, Some(("t".into(), 0)), Duration::ZERO);
        h.disk_reading(
            t0 + 4 * INTERVAL,
            Some(("t".into(), 40_000)),
            Duration::ZERO,
        );
        let j = h.to_json();
        assert_eq!(j["disk_bytes_per_s"], json!(10_000.0));
        // (10 MB - 2 MB) / 10 kB/s
        assert_eq!(j["seconds_left"], json!(800.0));
    }

    #[test]
    fn a_sensor_not_connected_has_no_rate_there() {
        let h = History::default();
        let t0 = Instant::now();
        let mut p = status(&[("gps", 10.0, 0)], 1);
        h.sample(&p, t0, 0.0);
        p.sensors[0].1 = None;
        h.sample(&p, t0 + INTERVAL, 1.0);
        p.sensors[0].1 = Some(9.0);
        h.sample(&p, t0 + 2 * INTERVAL, 2.0);
        assert_eq!(h.to_json()["sensors"]["gps"], json!([10.0, null, 9.0]));
    }

    #[test]
    fn a_sensor_that_leaves_adds_no_negative_rate() {
        let h = History::default();
        let t0 = Instant::now();
        h.sample(&status(&[("a", 1.0, 5000), ("b", 1.0, 10)], 1), t0, 0.0);
        h.sample(&status(&[("b", 1.0, 20)], 1), t0 + INTERVAL, 1.0);
        assert_eq!(h.to_json()["bytes_per_s"], json!([0.0, 10.0]));
    }
}
