//! Trace directories over a daemon's life: their names (local time, as the collector names
//! them) and, at start, the traces a crash left unfinished (found by their event logs,
//! recovered, the newest one resumed).

use std::path::{Path, PathBuf};

use super::events::{readable_events, Event, EventLog};
use roverlog_core::error::Result;
use roverlog_core::format::events::{Count, Counts, EventReader};
use roverlog_core::format::recover_sensor;
use roverlog_core::format::trace::sensor_dirs;

/// The newest trace under `root` whose event log has no `stop` after its last `start` (the
/// daemon died while recording it): its sensors are recovered (torn tails cut) and it is
/// returned, to be resumed.
///
/// A crash during a rotation leaves the trace being left unfinished too: its writers were
/// still appending what was queued before the switch. So older traces are recovered as well,
/// newest first, up to the first finished one; they are not resumed but closed with a `stop`
/// (reason `crash`), which also keeps the next start from looking at them again.
pub fn recover_unfinished(root: &Path) -> Result<Option<PathBuf>> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Ok(None);
    };
    // Only real directories: a symbolic link under data_root (made by someone else, pointing
    // anywhere) must not get its files cut by recovery or recorded into.
    let mut traces: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.join(super::events::EVENTS_DIR).is_dir())
        .collect();
    // Names sort by their time to the second only: within one second a label or a `.N`
    // suffix decides, whatever the order the traces were made in. The time of each one's
    // first event (written when it was created) orders those.
    let stamp = |p: &Path| {
        let n = p.file_name().unwrap_or_default().to_string_lossy();
        n.get(..19).unwrap_or(&n).to_string()
    };
    traces.sort_by(|a, b| {
        stamp(a)
            .cmp(&stamp(b))
            .then_with(|| {
                let (ta, tb) = (created_at(a), created_at(b));
                ta.partial_cmp(&tb).unwrap_or(std::cmp::Ordering::Equal)
            })
            .then_with(|| a.cmp(b))
    });
    let mut resume = None;
    for (k, trace) in traces.iter().rev().enumerate() {
        if is_finished(trace) {
            break;
        }
        let log = EventLog::open(trace)?;
        let mut counts = Counts::default();
        for name in sensor_dirs(trace)? {
            let dir = trace.join(&name);
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
                // Not a sensor directory of this trace (see the writer's `open`): its files
                // are someone else's and are not cut.
                tracing::warn!(path = %dir.display(), "not recovered: a symbolic link");
                continue;
            }
            let r = recover_sensor(&dir)?;
            let cuts: Vec<String> = r.cuts.iter().map(|c| c.to_string()).collect();
            tracing::warn!(trace = %trace.display(), sensor = %name, len = r.len, "recovered after a crash: {cuts:?}");
            log.write(Event::Recovered {
                sensor: name.clone(),
                len: r.len,
                cuts,
                left_alone: r.left_alone.iter().map(|p| p.to_string()).collect(),
                after: None,
            });
            counts.0.push((name, Count::Samples { samples: r.len }));
        }
        log.write(Event::Crash {
            note: "the daemon ended without stopping this trace".into(),
        });
        if k == 0 {
            resume = Some(trace.clone());
        } else {
            let name = trace.file_name().unwrap_or_default().to_string_lossy();
            log.write(Event::Stop {
                trace: name.into_owned(),
                reason: "crash".into(),
                sensors: counts,
            });
        }
        log.sync();
    }
    Ok(resume)
}

/// The time of a trace's first event (its creation), if it has one.
pub(super) fn created_at(trace: &Path) -> Option<f64> {
    Some(EventReader::open(trace).ok()?.next()?.ok()?.t)
}

/// Whether a trace's last `start` (or resume) is followed by a `stop`.
fn is_finished(trace: &Path) -> bool {
    // By kind, not by variant: a `stop` whose fields this version cannot read (kept as
    // `Other`) still closed its trace, and recovering a finished trace would be wrong.
    let events = readable_events(trace);
    let last_stop = events.iter().rposition(|e| e.event.kind() == "stop");
    let last_start = events.iter().rposition(|e| e.event.kind() == "start");
    last_stop.is_some() && last_stop > last_start
}

/// Local time as `YYYY.MM.DD-HH.MM.SS` (the collector's trace names).
pub fn local_timestamp() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a time_t and a tm we own.
    unsafe { libc::localtime_r(&t, &mut tm) };
    format!(
        "{:04}.{:02}.{:02}-{:02}.{:02}.{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}
