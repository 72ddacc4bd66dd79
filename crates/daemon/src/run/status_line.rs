//! What the stats tick says: one log line per sensor, and the `STATUS=` line that
//! `systemctl status` shows (alarms first, then recording or why not, then totals).

use std::sync::atomic::Ordering::Relaxed;

use crate::recording::Recorder;

/// Totals over every sensor at one stats tick, for the `STATUS=` line.
#[derive(Default)]
pub(super) struct Totals {
    sensors: usize,
    connected: usize,
    rate_hz: f64,
    drops: u64,
    failed: usize,
}

/// The `STATUS=` line shown by `systemctl status`.
pub(super) fn status_line(rec: &Recorder, t: Totals) -> String {
    let state = match (rec.current(), rec.stopped_reason()) {
        (Some((trace, _)), _) => format!("recording {trace}"),
        (None, Some(why)) => format!("not recording ({why})"),
        (None, None) => "not recording".to_string(),
    };
    let alarms: Vec<String> = rec
        .alarms()
        .all()
        .iter()
        .map(|a| format!("{} {}", a.alarm, a.sensor).trim().to_string())
        .collect();
    let alarms = match alarms.len() {
        0 => String::new(),
        n => format!("ALARM ({n}): {}; ", alarms.join(", ")),
    };
    format!(
        "STATUS={alarms}{state}: {} sensor(s), {} connected, {:.1} samples/s, {} dropped, {} failed",
        t.sensors, t.connected, t.rate_hz, t.drops, t.failed
    )
}

/// One log line per sensor; returns the totals.
pub(super) fn log_stats(rec: &Recorder) -> Totals {
    let mut t = Totals::default();
    for s in rec.slots() {
        let rate = s.stats.update_rate();
        let st = &s.stats;
        tracing::info!(
            sensor = %s.name,
            samples = st.samples.load(Relaxed),
            rate_hz = format!("{rate:.1}"),
            queue = s.queue_fill(),
            queue_high_water = st.queue_high_water.load(Relaxed),
            drops = st.drops.load(Relaxed),
            gaps = st.gaps.load(Relaxed),
            durable = st.durable.load(Relaxed),
            failed = st.failure().map(|f| f.to_string()).unwrap_or_default(),
            "stats"
        );
        t.sensors += 1;
        t.connected += usize::from(st.connected.load(Relaxed));
        t.rate_hz += rate;
        t.drops += st.drops.load(Relaxed);
        t.failed += usize::from(st.failure().is_some());
    }
    t
}
