//! The time-merged stream: every sample of the chosen sensors in timestamp order.
//!
//! A k-way merge over each sensor's `ts` holding one candidate per sensor, so memory is one
//! heap entry per sensor plus the sensors' (mapped) timestamps. Equal timestamps come out in
//! sensor-selection order, then in sample order. A sensor whose clock stepped backwards keeps
//! its own sample order (the merge never reorders samples within a sensor): its samples are
//! merged as if their times were raised to the latest time seen so far in that sensor.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::error::{CorruptProblem, Error, Result};
use crate::format::Trace;

/// One sample of the merged stream.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedSample {
    /// Index of the sensor in [`TimeMerge::sensors`].
    pub sensor: usize,
    /// Sample index within that sensor.
    pub index: u64,
    /// The sample's recorded timestamp (epoch seconds).
    pub ts: f64,
}

struct Source {
    name: String,
    ts: Vec<f64>,
    /// Whether `ts` never decreases (lets a window stop early and seeks binary-search).
    monotonic: bool,
}

/// A time-merged stream over some sensors of a trace, optionally limited to `[start, end)`.
pub struct TimeMerge {
    sources: Vec<Source>,
    heap: BinaryHeap<Entry>,
    /// Per sensor: the next sample index to push and the running maximum of its times.
    next: Vec<(u64, f64)>,
    window: (f64, f64),
    /// Where the stream restarted: samples earlier than this are skipped.
    from: f64,
}

#[derive(Debug)]
struct Entry {
    /// The merge key: the sample's time raised to the sensor's running maximum.
    key: f64,
    sensor: usize,
    index: u64,
    ts: f64,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed, so the max-heap pops the earliest key, then the first sensor, then the first
    /// index.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .key
            .total_cmp(&self.key)
            .then(other.sensor.cmp(&self.sensor))
            .then(other.index.cmp(&self.index))
    }
}

impl TimeMerge {
    /// Merges `sensors` of `trace` (all real sensors when empty).
    pub fn new(trace: &Trace, sensors: &[&str]) -> Result<TimeMerge> {
        let names: Vec<String> = if sensors.is_empty() {
            trace.sensor_names().into_iter().map(String::from).collect()
        } else {
            sensors.iter().map(|s| s.to_string()).collect()
        };
        let mut sources = Vec::with_capacity(names.len());
        for name in names {
            let ts = trace.sensor(&name)?.timestamps()?;
            if let Some(i) = ts.iter().position(|t| !t.is_finite()) {
                return Err(Error::corrupt(
                    trace.dir().join(&name).join("ts"),
                    CorruptProblem::TimeNotFinite {
                        sample: i,
                        time: ts[i],
                    },
                ));
            }
            let monotonic = ts.windows(2).all(|w| w[0] <= w[1]);
            sources.push(Source {
                name,
                ts,
                monotonic,
            });
        }
        Self::from_sources(sources)
    }

    /// A merge over in-memory timestamp lists (for tests and for datasets that are not
    /// roverd traces).
    pub fn from_timestamps(sensors: Vec<(String, Vec<f64>)>) -> Result<TimeMerge> {
        let sources = sensors
            .into_iter()
            .map(|(name, ts)| {
                let monotonic = ts.windows(2).all(|w| w[0] <= w[1]);
                Source {
                    name,
                    ts,
                    monotonic,
                }
            })
            .collect();
        Self::from_sources(sources)
    }

    fn from_sources(sources: Vec<Source>) -> Result<TimeMerge> {
        let mut m = TimeMerge {
            next: vec![(0, f64::NEG_INFINITY); sources.len()],
            sources,
            heap: BinaryHeap::new(),
            window: (f64::NEG_INFINITY, f64::INFINITY),
            from: f64::NEG_INFINITY,
        };
        m.seek(f64::NEG_INFINITY);
        Ok(m)
    }

    /// The merged sensors' names, in selection order.
    pub fn sensors(&self) -> Vec<&str> {
        self.sources.iter().map(|s| s.name.as_str()).collect()
    }

    /// The timestamps of sensor `i`.
    pub fn timestamps(&self, sensor: usize) -> &[f64] {
        &self.sources[sensor].ts
    }

    /// Total samples in the window (counts every sensor's samples with `start <= ts < end`).
    pub fn len_in_window(&self) -> u64 {
        let (a, b) = self.window;
        self.sources
            .iter()
            .map(|s| s.ts.iter().filter(|&&t| t >= a && t < b).count() as u64)
            .sum()
    }

    /// The earliest and latest timestamps over all sensors, if any sample exists.
    pub fn time_span(&self) -> Option<(f64, f64)> {
        let all = self.sources.iter().flat_map(|s| s.ts.iter().copied());
        all.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        })
    }

    /// Limits the stream to `start <= ts < end` and restarts it at `start`.
    pub fn window(&mut self, start: f64, end: f64) {
        self.window = (start, end);
        self.seek(start);
    }

    /// Restarts the stream at the first samples at or after `time` (within the window).
    pub fn seek(&mut self, time: f64) {
        let time = time.max(self.window.0);
        self.heap.clear();
        for (i, s) in self.sources.iter().enumerate() {
            let start = if s.monotonic {
                s.ts.partition_point(|&t| t < time) as u64
            } else {
                0
            };
            self.next[i] = (start, f64::NEG_INFINITY);
        }
        self.from = time;
        for i in 0..self.sources.len() {
            self.push_next(i);
        }
    }

    /// Pushes sensor `i`'s next sample inside the window onto the heap, if any.
    fn push_next(&mut self, i: usize) {
        let s = &self.sources[i];
        let (a, b) = (self.from, self.window.1);
        let (mut idx, mut running) = self.next[i];
        while let Some(&t) = s.ts.get(idx as usize) {
            running = running.max(t);
            idx += 1;
            if t >= a && t < b {
                self.heap.push(Entry {
                    key: running,
                    sensor: i,
                    index: idx - 1,
                    ts: t,
                });
                break;
            }
            if s.monotonic && t >= b {
                idx = s.ts.len() as u64;
                break;
            }
        }
        self.next[i] = (idx, running);
    }
}

impl Iterator for TimeMerge {
    type Item = MergedSample;
    fn next(&mut self) -> Option<MergedSample> {
        let e = self.heap.pop()?;
        self.push_next(e.sensor);
        Some(MergedSample {
            sensor: e.sensor,
            index: e.index,
            ts: e.ts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(sensors: &[(&str, &[f64])]) -> TimeMerge {
        TimeMerge::from_timestamps(
            sensors
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_vec()))
                .collect(),
        )
        .unwrap()
    }

    fn order(m: TimeMerge) -> Vec<(usize, u64)> {
        m.map(|s| (s.sensor, s.index)).collect()
    }

    #[test]
    fn interleaved_and_equal_timestamps() {
        let m = merge(&[
            ("a", &[1.0, 2.0, 2.0, 5.0]),
            ("b", &[0.5, 2.0, 3.0]),
            ("c", &[]),
        ]);
        assert_eq!(
            order(m),
            [(1, 0), (0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (0, 3)],
            "ties go by sensor order, then sample order"
        );
    }

    #[test]
    fn out_of_order_timestamps_keep_each_sensors_order() {
        // b's clock steps back after its second sample.
        let m = merge(&[("a", &[1.0, 2.0, 3.0, 4.0]), ("b", &[1.5, 3.5, 2.5, 3.6])]);
        let got: Vec<_> = m.map(|s| (s.sensor, s.index, s.ts)).collect();
        assert_eq!(
            got,
            [
                (0, 0, 1.0),
                (1, 0, 1.5),
                (0, 1, 2.0),
                (0, 2, 3.0),
                (1, 1, 3.5),
                (1, 2, 2.5),
                (1, 3, 3.6),
                (0, 3, 4.0)
            ]
        );
    }

    #[test]
    fn seek_and_window() {
        let mut m = merge(&[("a", &[1.0, 2.0, 3.0, 4.0]), ("b", &[1.5, 2.5, 3.5])]);
        m.seek(2.5);
        assert_eq!(order(m), [(1, 1), (0, 2), (1, 2), (0, 3)]);
        let mut m = merge(&[("a", &[1.0, 2.0, 3.0, 4.0]), ("b", &[1.5, 2.5, 3.5])]);
        m.window(1.5, 3.5);
        assert_eq!(m.len_in_window(), 4);
        assert_eq!(order(m), [(1, 0), (0, 1), (1, 1), (0, 2)]);
        let mut m = merge(&[("a", &[1.0, 2.0]), ("b", &[0.0])]);
        m.seek(10.0);
        assert_eq!(m.next(), None);
        m.seek(0.0);
        assert_eq!(
            order(m),
            [(1, 0), (0, 0), (0, 1)],
            "seeking back works after seeking ahead"
        );
        assert_eq!(
            merge(&[("a", &[1.0, 7.0]), ("b", &[0.5])]).time_span(),
            Some((0.5, 7.0))
        );
    }

    #[test]
    fn window_over_a_sensor_with_a_clock_step() {
        let mut m = merge(&[("a", &[5.0, 6.0, 1.0, 2.0, 7.0])]);
        m.window(1.5, 6.5);
        let got: Vec<_> = m.map(|s| s.ts).collect();
        assert_eq!(got, [5.0, 6.0, 2.0]);
    }
}
