//! The dashboard's memory of the last minutes: one point a second of every sensor's rate and
//! of the bytes written per second, so a page opened mid-drive draws its sparklines at once,
//! and the disk's time left at the current write rate.
//!
//! Sampled from `Recorder::status` (the same numbers `ctl status` shows) by one task that
//! runs only when the dashboard is on; writers never see it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::poison::LockExt;
use crate::recording::{Recorder, Status};
use crate::shutdown::Shutdown;

/// Points kept: five minutes at one a second.
pub const POINTS: usize = 300;
pub const INTERVAL: Duration = Duration::from_secs(1);
/// The write rate behind "time left" is the mean over this many points.
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
    recording: bool,
}

/// What one point reads of `status`.
pub struct Point {
    /// Per sensor: its rate and its byte counter.
    pub sensors: Vec<(String, f64, u64)>,
    pub free_bytes: Option<u64>,
    pub recording: bool,
}

impl Point {
    pub fn of(status: &Status) -> Point {
        Point {
            sensors: status
                .sensors
                .iter()
                .map(|(n, s)| (n.clone(), s.counters.rate_hz, s.counters.bytes))
                .collect(),
            free_bytes: status.disk.free_bytes,
            recording: status.recording,
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
            r.push_back(Some(*hz));
        }
        for r in s.rates.values_mut() {
            r.resize(len, None);
        }
        s.rates.retain(|_, r| r.iter().any(Option::is_some));
        s.free_bytes = point.free_bytes;
        s.recording = point.recording;
    }

    /// The series as JSON: `t`, `bytes_per_s`, `sensors` (name to rates), and the disk's
    /// `seconds_left` at the mean write rate of the last points (`null` when not recording,
    /// nothing is written, or the free space is unknown).
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
        let seconds_left = match s.free_bytes {
            Some(free) if s.recording && mean > 0.0 => Some((free as f64 / mean).round()),
            _ => None,
        };
        json!({
            "interval_s": INTERVAL.as_secs_f64(),
            "points": POINTS,
            "t": s.t,
            "bytes_per_s": s.bytes_per_s.iter().map(|b| b.round()).collect::<Vec<_>>(),
            "write_bytes_per_s": mean.round(),
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
        history.sample(&Point::of(&rec.status()), Instant::now(), epoch_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(sensors: &[(&str, f64, u64)], free: u64) -> Point {
        Point {
            sensors: sensors
                .iter()
                .map(|(n, hz, b)| (n.to_string(), *hz, *b))
                .collect(),
            free_bytes: Some(free),
            recording: true,
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
        // mean of 0 and 400 B/s: 1000 B last 5 s.
        assert_eq!(j["seconds_left"], json!(5.0));
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
        assert_eq!(j["seconds_left"], json!(10.0));
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
