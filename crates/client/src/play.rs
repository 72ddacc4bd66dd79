//! Playback: a [`Source`] pushed into a running daemon over the ingest protocol, one
//! connection per sensor, in timestamp order, paced by the recorded timestamps.
//!
//! Pacing schedules every sample against one monotonic clock read at the start (`due =
//! start + (ts - first) / rate`) and sleeps until then: errors never accumulate the way they
//! do when sleeping the gap between samples.
//!
//! Each sensor sends through a [`ResilientDriver`], so a replay rides out a daemon restart:
//! the first connections fail fast (no daemon, no replay), but later the drivers reconnect
//! with back-off for up to [`PlayOptions::reconnect_timeout`] and resend what the daemon did
//! not keep. Every sample is written as it is due (no batching); to keep the retain buffer
//! bounded, a sensor asks for durability whenever half of its share of
//! [`PlayOptions::max_retained`] has accumulated since its last request.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, PlayError, Result};
use crate::{Driver, ResilientDriver, ResilientOptions};
use roverlog_core::parallel::pipeline;
use roverlog_core::replay::merge::TimeMerge;
use roverlog_core::replay::source::{check_sensors, Source};
use roverlog_core::replay::Fetched;

/// How to play.
#[derive(Debug, Clone)]
pub struct PlayOptions {
    /// Speed factor (1.0 = real time); `None` sends as fast as the daemon takes them.
    pub rate: Option<f64>,
    /// Seconds after the source's first timestamp to start at.
    pub start: f64,
    /// Seconds of the source to play (from `start`); all when `None`.
    pub duration: Option<f64>,
    /// Start over at the end (timestamps keep increasing) until `stop` is set.
    pub looped: bool,
    /// How long each sensor tries to reach a daemon that went away mid-replay.
    pub reconnect_timeout: Duration,
    /// Bytes of samples kept until acknowledged durable (for resending after a reconnect),
    /// over all sensors together: each gets an even share, so a replay's memory does not
    /// grow with its sensor count.
    pub max_retained: usize,
    /// Threads decoding samples ahead of the sender (0: every usable CPU): the source is
    /// read in order on one thread, decoded on these, sent in order as each falls due.
    pub threads: usize,
}

impl Default for PlayOptions {
    fn default() -> Self {
        PlayOptions {
            rate: Some(1.0),
            start: 0.0,
            duration: None,
            looped: false,
            reconnect_timeout: Duration::from_secs(30),
            max_retained: 128 << 20,
            threads: 0,
        }
    }
}

/// What a playback did.
#[derive(Debug, Clone, Default)]
pub struct PlayReport {
    /// Per sensor: (name, samples sent, durable count the daemon confirmed at the end).
    pub sensors: Vec<(String, u64, u64)>,
    pub samples: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// How late each sample was sent against its schedule (empty at maximum speed).
    pub lateness: Lateness,
    pub loops: u64,
}

impl PlayReport {
    /// The `q` quantile (0..=1) of lateness, in seconds (see [`Lateness::quantile`]).
    pub fn late_quantile(&self, q: f64) -> Option<f64> {
        self.lateness.quantile(q)
    }
}

/// Lateness of the samples sent, in a few KiB however long a replay loops: a histogram with
/// buckets 1 % apart from 1 us up, and the exact maximum.
#[derive(Debug, Clone, Default)]
pub struct Lateness {
    /// `counts[0]`: under 1 us; `counts[i]`: from `RATIO^(i-1)` to `RATIO^i` us.
    counts: Vec<u64>,
    n: u64,
    max: f64,
}

impl Lateness {
    const RATIO: f64 = 1.01;
    /// 1.01^3000 us is over 100 days: later samples share the last bucket.
    const BUCKETS: usize = 3001;

    fn bucket(seconds: f64) -> usize {
        let us = seconds * 1e6;
        if us.is_nan() || us < 1.0 {
            return 0;
        }
        (1 + (us.ln() / Self::RATIO.ln()) as usize).min(Self::BUCKETS - 1)
    }

    /// Counts one sample that was `seconds` late.
    pub fn record(&mut self, seconds: f64) {
        let b = Self::bucket(seconds);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.n += 1;
        self.max = self.max.max(seconds);
    }

    /// Samples counted.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether no sample was counted.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `q` quantile (0..=1) in seconds: the upper edge of its bucket (at most 1 % above
    /// the exact value, or 1 us), never above the maximum.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((self.n - 1) as f64 * q.clamp(0.0, 1.0)).round() as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                let upper = Self::RATIO.powi(i as i32) * 1e-6;
                return Some(upper.min(self.max));
            }
        }
        Some(self.max)
    }
}

/// Plays `source` into the daemon listening on `socket`. `progress(done, total)` is called
/// now and then (total is per loop). Returns when the source (or window) is exhausted, or
/// when `stop` is set.
pub fn play(
    source: &mut dyn Source,
    socket: &Path,
    opts: &PlayOptions,
    stop: &AtomicBool,
    mut progress: impl FnMut(u64, u64),
) -> Result<PlayReport> {
    check_sensors(source.sensors())?;
    if let Some(r) = opts.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(PlayError::Rate { rate: r }.into());
        }
    }
    if !(opts.start.is_finite() && opts.start >= 0.0) {
        return Err(PlayError::Start { start: opts.start }.into());
    }
    if let Some(d) = opts.duration {
        if d.is_nan() || d < 0.0 {
            return Err(PlayError::Duration { duration: d }.into());
        }
    }
    let names: Vec<String> = source.sensors().iter().map(|s| s.name.clone()).collect();
    let mut all = Vec::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        all.push((n.clone(), source.timestamps(i)?));
    }
    let mut merge = TimeMerge::from_timestamps(all)?;
    let Some((first, last)) = merge.time_span() else {
        return Ok(PlayReport::default());
    };
    let from = first + opts.start;
    let until = opts.duration.map_or(f64::INFINITY, |d| from + d);
    merge.window(from, until);
    let per_loop = merge.len_in_window();
    // Each loop is shifted by the span plus one average sample period, so time keeps going.
    let period = if per_loop > 1 {
        (last.min(until) - from).max(0.0) / (per_loop - 1) as f64
    } else {
        1.0
    };
    let loop_shift = (last.min(until) - from).max(0.0) + period.max(1e-6);

    let mut senders = Senders::connect(source, socket, opts)?;
    let mut report = PlayReport::default();
    // Read in order on one thread, decoded ahead on the others; taken here in order, each
    // sent when due (decoding never moves a sample's time, it only keeps ahead of it).
    let reads = loops(merge, from, loop_shift, opts.looped && per_loop > 0).map(|s| {
        let fetched = source.fetch(s.sensor, s.index, None)?;
        Ok((s, fetched))
    });
    let decode = |(s, f): (Scheduled, Fetched)| -> Result<(Scheduled, Vec<Vec<u8>>)> {
        Ok((s, f.finish()?))
    };
    let mut done = 0;
    let started = Instant::now();
    pipeline(
        roverlog_core::cpus::threads(opts.threads),
        AHEAD,
        reads,
        decode,
        |_, (s, buf)| {
            if stop.load(Ordering::Relaxed) {
                return Ok(ControlFlow::Break(()));
            }
            let due = match opts.rate {
                Some(r) => Some(Duration::try_from_secs_f64((s.ts - from) / r).map_err(|_| {
                    PlayError::Due {
                        rate: r,
                        ts: s.ts,
                        after: (s.ts - from) / r,
                    }
                })?),
                None => None,
            };
            if let Some(due) = due {
                if !sleep_until(started, due, stop) {
                    return Ok(ControlFlow::Break(()));
                }
            }
            report.bytes += senders.send(&s, &buf)?;
            if let Some(due) = due {
                report
                    .lateness
                    .record(started.elapsed().saturating_sub(due).as_secs_f64());
            }
            report.samples += 1;
            done += 1;
            if done == per_loop {
                // A loop is whole.
                progress(done, per_loop);
                report.loops = s.lap + 1;
                done = 0;
            } else if done % 64 == 0 {
                progress(done, per_loop);
            }
            Ok(ControlFlow::Continue(()))
        },
    )?;
    if per_loop == 0 {
        // An empty window is one loop of nothing.
        progress(0, 0);
        report.loops = 1;
    }
    report.sensors = senders.finish(&names, socket)?;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// One connection per sensor, and what each has sent.
struct Senders {
    drivers: Vec<ResilientDriver>,
    /// Per sensor: samples sent.
    sent: Vec<u64>,
    /// Per sensor: retained bytes right after its last durability request.
    retained_at_sync: Vec<usize>,
    /// Each sensor's share of [`PlayOptions::max_retained`].
    max_retained: usize,
}

impl Senders {
    fn connect(source: &dyn Source, socket: &Path, opts: &PlayOptions) -> Result<Senders> {
        let n = source.sensors().len();
        let max_retained = opts.max_retained / n.max(1);
        let resilient = ResilientOptions {
            max_bytes: 1,
            max_retained,
            reconnect_timeout: opts.reconnect_timeout,
            ..ResilientOptions::default()
        };
        let mut drivers = Vec::with_capacity(n);
        for s in source.sensors() {
            // The first connection fails fast; reconnects ask for the final count at a clean
            // shutdown (nothing resent twice) and for repeats to be dropped.
            let flags = resilient.flags(true);
            let (d, hello) = Driver::connect_with(socket, &s.name, &s.meta, flags)?;
            drivers.push(ResilientDriver::adopt(
                d,
                hello,
                s.meta.clone(),
                &resilient,
            )?);
        }
        Ok(Senders {
            drivers,
            sent: vec![0; n],
            retained_at_sync: vec![0; n],
            max_retained,
        })
    }

    /// Sends one sample (asking for durability when its sensor's retained bytes call for it);
    /// its bytes.
    fn send(&mut self, s: &Scheduled, buf: &[Vec<u8>]) -> Result<u64> {
        let refs: Vec<&[u8]> = buf.iter().map(Vec::as_slice).collect();
        // Consecutive per connection: every sample is sent, so the daemon sees no gap.
        let d = &mut self.drivers[s.sensor];
        d.send(s.ts, Some(self.sent[s.sensor]), &refs)?;
        self.sent[s.sensor] += 1;
        if d.retained_bytes() >= self.retained_at_sync[s.sensor] + self.max_retained / 2 {
            d.sync()?;
            self.retained_at_sync[s.sensor] = d.retained_bytes();
        }
        Ok(refs.iter().map(|r| r.len() as u64).sum())
    }

    /// Waits for every sensor's samples to be durable: per sensor (name, sent, durable).
    fn finish(mut self, names: &[String], socket: &Path) -> Result<Vec<(String, u64, u64)>> {
        let mut out = Vec::with_capacity(names.len());
        for (i, d) in self.drivers.iter_mut().enumerate() {
            let durable = d.sync()?;
            let want = d.expected_durable();
            if !d.recording() {
                return Err(Error::NotRecording {
                    socket: socket.to_path_buf(),
                    sensor: names[i].clone(),
                    reason: d.not_recording_reason(),
                });
            }
            if durable < want {
                return Err(Error::NotDurable {
                    sensor: names[i].clone(),
                    durable,
                    expected: want,
                });
            }
            out.push((names[i].clone(), self.sent[i], durable));
        }
        Ok(out)
    }
}

/// Results each decoding thread may hold ahead of the sender (see
/// [`roverlog_core::parallel::pipeline()`]).
const AHEAD: usize = 2;

/// One sample to send: which, when (its time shifted by its loop), in which loop (0 first).
struct Scheduled {
    sensor: usize,
    index: u64,
    ts: f64,
    lap: u64,
}

/// The samples of `merge`'s window from `from` on, in time order; with `looped`, over and over,
/// each loop's times `shift` later than the last's.
fn loops(
    mut merge: TimeMerge,
    from: f64,
    shift: f64,
    looped: bool,
) -> impl Iterator<Item = Scheduled> + Send {
    let mut lap = 0;
    merge.seek(from);
    std::iter::from_fn(move || loop {
        if let Some(m) = merge.next() {
            return Some(Scheduled {
                sensor: m.sensor,
                index: m.index,
                ts: m.ts + lap as f64 * shift,
                lap,
            });
        }
        if !looped {
            return None;
        }
        lap += 1;
        merge.seek(from);
    })
}

/// Sleeps until `due` after `started`, in slices short enough that `stop` (Ctrl-C) is seen
/// within a tenth of a second even across an hours-long gap in the data. `false`: stopped.
fn sleep_until(started: Instant, due: Duration, stop: &AtomicBool) -> bool {
    const SLICE: Duration = Duration::from_millis(100);
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = started.elapsed();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(SLICE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_sleep_until_a_far_due_time_ends_soon_after_stop() {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            s.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        // Due in two minutes: one plain sleep would return then, and report "not stopped".
        assert!(!sleep_until(started, Duration::from_secs(120), &stop));
        assert!(started.elapsed() < Duration::from_secs(60));
        setter.join().unwrap();
        // Already due: at once, not stopped.
        assert!(sleep_until(
            started,
            Duration::ZERO,
            &AtomicBool::new(false)
        ));
    }

    #[test]
    fn lateness_quantiles_within_one_percent_in_bounded_memory() {
        let mut l = Lateness::default();
        assert_eq!(l.quantile(0.5), None);
        // 1..=1000 ms, in a scrambled order.
        for i in 0..1000u64 {
            l.record(((i * 7919) % 1000 + 1) as f64 * 1e-3);
        }
        for (q, exact) in [(0.0, 0.001), (0.5, 0.5005), (0.99, 0.990), (1.0, 1.0)] {
            let got = l.quantile(q).unwrap();
            // The rank rounds to a neighbour of the exact middle value.
            assert!(
                got >= exact - 0.001 && got <= (exact + 0.001) * 1.01,
                "q {q}: {got}"
            );
        }
        assert_eq!(l.quantile(1.0), Some(1.0), "the maximum is exact");
        // Sub-microsecond and far too late samples still count; memory stays bounded.
        for i in 0..2_000_000u64 {
            l.record(if i % 2 == 0 { 1e-9 } else { 1e9 });
        }
        assert_eq!(l.len(), 2_001_000);
        assert!(l.counts.len() <= Lateness::BUCKETS);
        assert_eq!(l.quantile(0.0), Some(1e-6));
    }
}
