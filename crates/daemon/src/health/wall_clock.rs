//! The `clock_step` alarm: the host's wall clock (`CLOCK_REALTIME`, which every sample's
//! receive time and every event's `t` come from) stepped while recording, e.g. an NTP
//! daemon's step, `date -s`, or a clock set once the GPS got a fix. Each health tick reads the
//! wall clock against the boot clock (`CLOCK_BOOTTIME`: never set, and counting a suspend
//! like the wall clock does); when the wall clock moved by more than [`STEP_THRESHOLD`] more
//! or less than the boot clock since the previous tick, the alarm is raised, with the step.
//! A slewing clock (NTP's usual correction, at most 500 ppm: 50 us a 100 ms tick) never
//! reaches the threshold. The alarm stays raised for [`SHOWN_FOR`] after the last step, so the
//! crew sees it on the dashboard, then clears like the others.

use std::time::Duration;

use serde_json::json;

use super::Found;

/// A wall-clock step larger than this between two ticks raises `clock_step`.
pub const STEP_THRESHOLD: Duration = Duration::from_millis(100);
/// How long `clock_step` stays raised after the last step.
pub const SHOWN_FOR: Duration = Duration::from_secs(10);
/// Two boot-clock reads around the wall-clock read further apart than this (the thread was
/// preempted between them) are read again.
const READ_SPREAD: f64 = 0.005;

/// The two clocks read at (nearly) one instant, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// `CLOCK_REALTIME`: seconds since the epoch.
    pub wall: f64,
    /// `CLOCK_BOOTTIME`: seconds since boot.
    pub boot: f64,
}

fn now(clock: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// Reads both clocks: the wall clock between two boot-clock reads, taken again (at most
/// three times) when the thread was preempted between them. `None` when a clock cannot be
/// read.
pub fn read() -> Option<Reading> {
    let mut best = None;
    for _ in 0..3 {
        let b0 = now(libc::CLOCK_BOOTTIME)?;
        let wall = now(libc::CLOCK_REALTIME)?;
        let b1 = now(libc::CLOCK_BOOTTIME)?;
        best = Some(Reading {
            wall,
            boot: (b0 + b1) / 2.0,
        });
        if b1 - b0 <= READ_SPREAD {
            break;
        }
    }
    best
}

/// A step of the wall clock, as the alarm reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Seconds the wall clock moved beyond the boot clock (negative: backwards).
    pub step_s: f64,
    /// The wall time expected at the reading (the previous one plus the boot clock's
    /// advance), and the one read.
    pub from: f64,
    pub to: f64,
    /// The boot-clock time of the reading that found it.
    pub at_boot: f64,
}

/// The wall clock's steps, tick by tick, while recording.
#[derive(Debug, Default)]
pub struct WallClock {
    last: Option<Reading>,
    step: Option<Step>,
}

impl WallClock {
    /// Compares `r` with the previous reading: the step, if beyond [`STEP_THRESHOLD`].
    pub fn observe(&mut self, r: Reading) -> Option<Step> {
        let prev = self.last.replace(r)?;
        let expected = prev.wall + (r.boot - prev.boot);
        let step_s = r.wall - expected;
        if step_s.abs() <= STEP_THRESHOLD.as_secs_f64() {
            return None;
        }
        let step = Step {
            step_s,
            from: expected,
            to: r.wall,
            at_boot: r.boot,
        };
        tracing::warn!(step_s, "the host's wall clock stepped during the recording");
        self.step = Some(step);
        Some(step)
    }

    /// One tick: observes `r` and returns the `clock_step` alarm while the last step is
    /// less than [`SHOWN_FOR`] old. A tick whose clocks could not be read finds nothing new.
    pub fn check(&mut self, r: Option<Reading>) -> Option<Found> {
        let r = r?;
        self.observe(r);
        let s = self
            .step
            .filter(|s| r.boot - s.at_boot < SHOWN_FOR.as_secs_f64())?;
        Some((
            "clock_step".into(),
            String::new(),
            json!({
                "step_s": (s.step_s * 1000.0).round() / 1000.0,
                "from": s.from,
                "to": s.to,
                "threshold_s": STEP_THRESHOLD.as_secs_f64(),
            }),
        ))
    }

    /// Nothing records: the next recording starts comparing afresh (a step between
    /// recordings cuts no trace).
    pub fn reset(&mut self) {
        *self = WallClock::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings every 100 ms from `(wall, boot)`, with `wall_extra` added to the wall clock's
    /// advance at each one.
    fn ticks(c: &mut WallClock, start: Reading, wall_extra: &[f64]) -> Vec<Option<Found>> {
        let mut r = start;
        let mut out = vec![c.check(Some(r))];
        for extra in wall_extra {
            r = Reading {
                wall: r.wall + 0.1 + extra,
                boot: r.boot + 0.1,
            };
            out.push(c.check(Some(r)));
        }
        out
    }

    const T0: Reading = Reading {
        wall: 1.7e9,
        boot: 1000.0,
    };

    #[test]
    fn a_steady_or_slewing_clock_raises_nothing() {
        let mut c = WallClock::default();
        // 500 ppm (the kernel's largest slew) and scheduling noise of 5 ms.
        let extra: Vec<f64> = (0..600)
            .map(|i| 50e-6 + if i % 7 == 0 { 0.005 } else { -0.0007 })
            .collect();
        assert!(ticks(&mut c, T0, &extra).iter().all(Option::is_none));
    }

    #[test]
    fn a_step_forward_or_back_is_raised_with_its_size_then_clears() {
        for step in [0.5, -2.0, 0.101] {
            let mut c = WallClock::default();
            let mut extra = vec![0.0; 5];
            extra.push(step);
            // 12 s more of steady ticks.
            extra.extend(vec![0.0; 120]);
            let found = ticks(&mut c, T0, &extra);
            assert!(found[..6].iter().all(Option::is_none), "{step}");
            let (kind, sensor, d) = found[6].clone().expect("raised at the step");
            assert_eq!((kind.as_str(), sensor.as_str()), ("clock_step", ""));
            assert!((d["step_s"].as_f64().unwrap() - step).abs() < 1e-3, "{d}");
            assert!((d["to"].as_f64().unwrap() - d["from"].as_f64().unwrap() - step).abs() < 1e-3);
            // Held for SHOWN_FOR (10 s = 100 ticks), then gone.
            assert!(found[6..100].iter().all(Option::is_some), "{step}");
            assert!(found[110..].iter().all(Option::is_none), "{step}");
        }
    }

    #[test]
    fn a_step_just_under_the_threshold_is_not_one() {
        let mut c = WallClock::default();
        assert!(ticks(&mut c, T0, &[0.0, 0.099, -0.099, 0.0])
            .iter()
            .all(Option::is_none));
    }

    #[test]
    fn reset_forgets_the_previous_reading_and_the_step() {
        let mut c = WallClock::default();
        ticks(&mut c, T0, &[0.0, 3.0]);
        c.reset();
        // A recording starting after a step between recordings: nothing to report.
        let later = Reading {
            wall: T0.wall + 100.0,
            boot: T0.boot + 1.0,
        };
        assert!(c.check(Some(later)).is_none());
        assert!(c.check(None).is_none());
    }

    #[test]
    fn the_real_clocks_read_close_together() {
        let a = read().expect("both clocks readable");
        let b = read().unwrap();
        assert!(b.boot >= a.boot);
        // Back to back, no step: the wall clock moved as the boot clock did.
        assert!(((b.wall - a.wall) - (b.boot - a.boot)).abs() < 0.05);
    }
}
