//! Sensor health alarms: what a crew must know while the vehicle is still out.
//!
//! Every `health_interval_ms` while a trace is recording, each sensor is compared with what
//! is expected of it (config `sensors.<name>`: `expected_hz`, `tolerance`, `required`):
//!
//! - `silent`: no frame for `silent_periods` expected periods, and at least [`MIN_SILENT`]
//!   (connected or not): five periods of a 200 Hz sensor are within a scheduler's jitter;
//! - `rate_low` / `rate_high`: the rate the sensor sends at, measured over `rate_window_ms` on
//!   the frames received (not the samples written: those restart in every trace, and a
//!   snapshot ring's frames arrive in a trace at once), is outside `expected_hz` +-
//!   `tolerance` for at least [`RATE_HOLD`] (only while connected and not silent);
//! - `missing`: a `required` sensor is not connected `missing_after_ms` after recording
//!   started (this daemon's start of it; a rotation does not restart the wait);
//! - `queue_high`: its queue holds more than `queue_high_fraction` of its budget;
//! - `disk_low` (no sensor): the free space above `min_free_bytes` (where the disk guard
//!   stops recording) lasts less than `disk_low_seconds` at the rate all sensors send now;
//! - `clock_step` (no sensor): the host's wall clock stepped by more than 100 ms against its
//!   boot clock between two ticks ([`wall_clock`]);
//! - `disk_error`: a write or fsync failed ([`crate::disk_fault`]). It stays raised while
//!   nothing records too; raised while no trace is open (the failing disk stopped it), its
//!   line goes to the `events.jsonl` of the trace the failed file was in.
//!
//! Also a `clock_step` event (kind `offset`) when a sensor's median driver-vs-daemon clock
//! offset (`status` `clock_offset_s`) moves by more than `clock_step_threshold_s`, at most one
//! per sensor per [`CLOCK_STEP_HOLD`]: a driver clock that drifts steadily moves past the
//! threshold again and again, and an event every tick would fill the disk with them (and
//! leave no room for the `error` event that says the disk is full). Moves within the hold are
//! coalesced into the next event: its `from` is the previous event's `to`, its `moves` counts
//! them.
//!
//! A sensor without `expected_hz` learns it: once it has sent at a non-zero rate for
//! `learn_rate_ms` without a pause, the rate measured then becomes its expectation for the
//! rest of the daemon's run (logged). An alarm is raised once and cleared once: both are
//! written to `events.jsonl` (`alarm`, `alarm_clear` with `start` and `end`), logged, shown in
//! `status` (`alarms`, top level and per sensor), and given to `alarm_command` as JSON on its
//! stdin (at most 4 at once, each killed after `alarm_command_timeout_ms`; it never blocks
//! the daemon). When recording stops, the active alarms but `disk_error` are cleared. Otherwise an alarm clears
//! only when its condition has been gone for [`CLEAR_AFTER`], so a sensor at the edge of a
//! bound does not page the crew again and again.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::events::{now_epoch, Event, EventLog};
use crate::poison::LockExt;
use crate::shutdown::Shutdown;
use crate::slot::Slot;

mod checks;
mod command;
pub mod wall_clock;

/// Shortest silence that raises `silent`, whatever the expected rate.
pub const MIN_SILENT: Duration = Duration::from_millis(250);
/// How long a rate must stay out of its tolerance before `rate_low`/`rate_high` is raised.
pub const RATE_HOLD: Duration = Duration::from_secs(1);
/// How long a raised alarm's condition must be gone before the alarm clears.
pub const CLEAR_AFTER: Duration = Duration::from_secs(1);
/// Shortest time between two `clock_step` (`offset`) events of one sensor.
pub const CLOCK_STEP_HOLD: Duration = Duration::from_secs(10);

/// One sensor's clock offset as `clock_step` tracks it.
struct Offset {
    /// The median at the last move past the threshold (or the first seen).
    last: f64,
    /// The `to` of the last event written (or the first median seen).
    reported: f64,
    /// When the last event was written.
    at: Option<Instant>,
    /// Moves past the threshold since then, not yet written.
    moves: u64,
}

/// One active alarm as `status` shows it: its kind, its sensor (empty for `disk_low`), when
/// it was raised (epoch seconds) and what was measured.
#[derive(Debug, Clone, Serialize)]
pub struct Alarm {
    pub alarm: String,
    pub sensor: String,
    pub start: f64,
    #[serde(flatten)]
    pub details: Map<String, Value>,
}

/// The alarms active now: written only by the health task, read by `status` and the
/// `STATUS=` line through clones of this handle.
#[derive(Clone, Default)]
pub struct Alarms(Arc<Mutex<Vec<Alarm>>>);

impl Alarms {
    fn set(&self, v: Vec<Alarm>) {
        *self.0.lock_or_recover() = v;
    }

    /// Every active alarm.
    pub fn all(&self) -> Vec<Alarm> {
        self.0.lock_or_recover().clone()
    }

    /// The active alarms of sensor `name`.
    pub fn for_sensor(&self, name: &str) -> Vec<Alarm> {
        self.0
            .lock_or_recover()
            .iter()
            .filter(|a| a.sensor == name)
            .cloned()
            .collect()
    }
}

/// What one health tick looks at, read from the recorder by the caller.
pub struct Watch {
    /// The open trace's event log (`None`: not recording, every alarm clears).
    pub events: Option<Arc<EventLog>>,
    /// Milliseconds since the daemon started (the clock of `last_frame_ms`).
    pub now_ms: u64,
    pub slots: Vec<Arc<Slot>>,
    /// The last free-space reading of `data_root`.
    pub free_bytes: Option<u64>,
    /// The failed writes and fsyncs not yet over: one `disk_error` each.
    pub faults: Vec<crate::disk_fault::Fault>,
}

/// One condition found at a tick: (kind, sensor, details).
type Found = (String, String, Value);

struct Health {
    cfg: Arc<Config>,
    /// Active alarms: (kind, sensor) -> (start, details).
    active: BTreeMap<(String, String), (f64, Value)>,
    /// Per sensor: (time, samples, bytes) over the rate window.
    history: HashMap<String, VecDeque<(Instant, u64, u64)>>,
    /// Per sensor: since when it has sent without a pause, and the learned rate.
    steady_since: HashMap<String, Instant>,
    learned: HashMap<String, f64>,
    /// Per sensor: its clock offset as `clock_step` last saw and reported it.
    offsets: HashMap<String, Offset>,
    /// Per sensor: when it was last silent or disconnected. Its rate is judged only once a
    /// whole rate window lies after that: a window holding the pause would page `rate_low`
    /// for the pause `silent` already reported.
    quiet_at: HashMap<String, Instant>,
    /// Since when the current recording runs (a rotation keeps it): `missing`'s clock.
    recording_since: Option<Instant>,
    /// Rate conditions found but not yet held for [`RATE_HOLD`]: since when.
    pending: HashMap<(String, String), Instant>,
    /// Raised alarms whose condition is gone but not yet for [`CLEAR_AFTER`]: since when.
    fading: HashMap<(String, String), Instant>,
    /// Raised alarms written while no trace was open: the trace whose log took the raise
    /// (a `disk_error`'s), which takes the clear too.
    homes: HashMap<(String, String), std::path::PathBuf>,
    /// The host's wall clock against its boot clock: `clock_step`.
    wall: wall_clock::WallClock,
    running: Arc<AtomicUsize>,
    alarms: Alarms,
}

impl Health {
    fn expected(&self, name: &str) -> Option<(f64, f64)> {
        let c = self
            .cfg
            .health
            .sensors
            .get(name)
            .cloned()
            .unwrap_or_default();
        c.expected_hz
            .or_else(|| self.learned.get(name).copied())
            .map(|hz| (hz, c.tolerance))
    }

    /// One evaluation: every alarm's condition on what `w` shows, debounced, then raised
    /// or cleared (see the module's list; one function per alarm in [`checks`]).
    fn tick(&mut self, w: Watch) {
        // `disk_error` stays raised while nothing records too (a failing disk stops the
        // recording): the crew must learn it until the sensor records again.
        let disk_errors = checks::disk_errors(&w.faults);
        let Some(events) = w.events else {
            self.idle(disk_errors, &w.faults);
            return;
        };
        let now = Instant::now();
        let recording_since = *self.recording_since.get_or_insert(now);
        let mut found: Vec<Found> = Vec::new();
        // The bytes per second all sensors send; `None` while one has no full window yet.
        let mut total_rate = Some(0.0);
        for s in &w.slots {
            let m = self.measure(s, now);
            total_rate = total_rate.zip(m.byte_rate).map(|(t, r)| t + r);
            self.learn_rate(s, &m, now);
            if let Some((hz, tol)) = self.expected(&s.name) {
                let silent = self.silent(s, hz, w.now_ms);
                found.extend(self.rate(s, &m, (hz, tol), silent.is_some(), now));
                found.extend(silent);
            }
            self.clock_offset(s, now, &events);
            found.extend(self.queue_high(s));
        }
        found.extend(self.missing(&w.slots, now, recording_since));
        found.extend(self.disk_low(w.free_bytes, total_rate));
        found.extend(self.wall.check(wall_clock::read()));
        found.extend(disk_errors);
        let found = self.debounce(found, now);
        self.apply(Some(&events), found);
    }

    /// A tick while nothing records: every alarm clears but `disk_error`, whose raise goes
    /// to the event log of the trace its file was in (no trace is open to take it).
    fn idle(&mut self, disk_errors: Vec<Found>, faults: &[crate::disk_fault::Fault]) {
        for f in faults {
            self.homes
                .insert(("disk_error".into(), f.sensor.clone()), f.trace.clone());
        }
        self.apply(None, disk_errors);
        self.history.clear();
        self.recording_since = None;
        self.pending.clear();
        self.fading.clear();
        self.wall.reset();
    }

    /// Holds back a rate condition until it lasted [`RATE_HOLD`], and keeps a raised alarm
    /// whose condition went away until it stayed away for [`CLEAR_AFTER`].
    fn debounce(&mut self, mut found: Vec<Found>, now: Instant) -> Vec<Found> {
        let seen: std::collections::HashSet<(String, String)> = found
            .iter()
            .map(|(k, s, _)| (k.clone(), s.clone()))
            .collect();
        self.pending.retain(|k, _| seen.contains(k));
        self.fading
            .retain(|k, _| !seen.contains(k) && self.active.contains_key(k));
        found.retain(|(kind, sensor, _)| {
            let key = (kind.clone(), sensor.clone());
            if !kind.starts_with("rate_") || self.active.contains_key(&key) {
                return true;
            }
            let since = *self.pending.entry(key).or_insert(now);
            now.duration_since(since) >= RATE_HOLD
        });
        for (key, (_, detail)) in &self.active {
            if seen.contains(key) {
                continue;
            }
            let since = *self.fading.entry(key.clone()).or_insert(now);
            if now.duration_since(since) < CLEAR_AFTER {
                found.push((key.0.clone(), key.1.clone(), detail.clone()));
            }
        }
        found
    }

    /// Raises what is new in `found`, clears what is no longer there.
    fn apply(&mut self, events: Option<&EventLog>, found: Vec<Found>) {
        let now = now_epoch();
        let mut seen = BTreeMap::new();
        for (kind, sensor, detail) in found {
            seen.insert((kind, sensor), detail);
        }
        let gone: Vec<(String, String)> = self
            .active
            .keys()
            .filter(|k| !seen.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            let (start, _) = self.active.remove(&key).expect("listed");
            let v = json!({"alarm": key.0, "sensor": key.1, "state": "cleared", "start": start, "end": now});
            tracing::info!(alarm = %key.0, sensor = %key.1, "alarm cleared");
            let home = self.homes.remove(&key);
            self.write_event(
                events,
                home.as_deref(),
                Event::AlarmClear {
                    alarm: key.0.clone(),
                    sensor: key.1.clone(),
                    start,
                    end: now,
                },
            );
            self.run_command(&v);
        }
        for (key, detail) in seen {
            if let Some(a) = self.active.get_mut(&key) {
                a.1 = detail;
                continue;
            }
            let mut v = json!({"alarm": key.0, "sensor": key.1, "state": "raised", "start": now});
            if let (Value::Object(m), Value::Object(d)) = (&mut v, &detail) {
                m.extend(d.clone());
            }
            tracing::warn!(alarm = %key.0, sensor = %key.1, "alarm raised: {detail}");
            self.write_event(
                events,
                self.homes.get(&key).map(|p| p.as_path()),
                Event::Alarm {
                    alarm: key.0.clone(),
                    sensor: key.1.clone(),
                    start: now,
                    details: detail.as_object().cloned().unwrap_or_default(),
                },
            );
            self.run_command(&v);
            self.active.insert(key, (now, detail));
        }
        let list = self
            .active
            .iter()
            .map(|((kind, sensor), (start, detail))| Alarm {
                alarm: kind.clone(),
                sensor: sensor.clone(),
                start: *start,
                details: detail.as_object().cloned().unwrap_or_default(),
            })
            .collect();
        self.alarms.set(list);
    }

    /// Writes an alarm's line to the open trace's log, or, while none is open, to that of
    /// `home` (the trace a `disk_error`'s file was in), opened for this line. A log that
    /// cannot be opened (the disk is gone) is logged: the alarm still reaches status, the
    /// daemon's log and `alarm_command`.
    fn write_event(&self, open: Option<&EventLog>, home: Option<&std::path::Path>, e: Event) {
        if let Some(ev) = open {
            ev.write(e);
        } else if let Some(trace) = home {
            match EventLog::open(trace) {
                Ok(ev) => ev.write(e),
                Err(err) => tracing::warn!(
                    "{} not written to {}'s events.jsonl: {err}",
                    e.kind(),
                    trace.display()
                ),
            }
        }
    }
}

/// Evaluates the alarms every `health_interval_ms` until shutdown, on what `watch` reads;
/// the active ones are published through `alarms`.
pub async fn run(
    cfg: Arc<Config>,
    alarms: Alarms,
    watch: impl Fn() -> Watch,
    mut shutdown: Shutdown,
) {
    let interval = cfg.health.interval;
    let mut h = Health {
        cfg,
        alarms,
        active: BTreeMap::new(),
        history: HashMap::new(),
        steady_since: HashMap::new(),
        learned: HashMap::new(),
        offsets: HashMap::new(),
        quiet_at: HashMap::new(),
        recording_since: None,
        pending: HashMap::new(),
        fading: HashMap::new(),
        homes: HashMap::new(),
        wall: wall_clock::WallClock::default(),
        running: Arc::new(AtomicUsize::new(0)),
    };
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = tick.tick() => h.tick(watch()),
            _ = shutdown.recv() => return,
        }
    }
}
