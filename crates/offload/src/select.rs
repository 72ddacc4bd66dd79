//! Which traces are sealed. The daemon's own records decide, as they do for the daemon
//! itself at start (crates/daemon/src/traces.rs):
//!
//! - a trace whose event log (`_roverlog/events.jsonl`) has a `stop` after its last `start`
//!   is closed: the daemon writes that `stop` only after every writer closed its files, and
//!   never reopens a stopped trace. A trace with no `start` at all (imported, upstream's)
//!   was not recorded by a daemon and is sealed too;
//! - a trace with a `start` not followed by a `stop` is being recorded if a daemon holds the
//!   lock on its directory's parent (the daemon's `data_root`, `flock`ed for as long as it
//!   runs); without that lock it is a trace a crash cut, which the daemon recovers (torn
//!   tails cut, a `stop` written) when it next starts: it is reported, never uploaded. A
//!   last line without its newline is a write such a crash tore: skipped, as the daemon's
//!   recovery drops it (a torn `stop` leaves the trace unfinished);
//! - a trace whose event log holds a whole line that is not an event cannot be told sealed
//!   or not: it is reported naming the line, never uploaded.
//!
//! The lock is probed with a shared, non-blocking `flock` released at once. A daemon starting
//! in that instant finds its `data_root` locked and refuses to start (as it refuses a second
//! daemon), saying so; it is not left recording into a trace being sent.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use roverlog_core::format::events::EventReader;

/// What a trace is, for offloading.
#[derive(Debug)]
pub enum TraceState {
    Sealed,
    /// A daemon is recording into it (it holds the lock on `data_root`).
    Recording {
        data_root: PathBuf,
    },
    /// Its recording was cut by a crash and not recovered yet. `torn_tail`: its event log
    /// ends in a line the crash tore (not read: the daemon's recovery drops it).
    Unfinished {
        torn_tail: bool,
    },
    /// Its event log cannot be read to its end, so whether the recording was closed cannot
    /// be told: reported, not uploaded.
    Unreadable(LogProblem),
}

/// Why a trace's event log could not be read (a last line without its newline is not one
/// of these: that is a write a crash tore, and the trace is [`TraceState::Unfinished`] or
/// sealed by its whole lines).
#[derive(Debug, thiserror::Error)]
pub enum LogProblem {
    #[error("line {line} of {} does not parse as an event ({error})", path.display())]
    Unparsable {
        path: PathBuf,
        line: u64,
        error: serde_json::Error,
    },
    #[error("line {line} of {} is longer than the {limit} bytes a line may have", path.display())]
    TooLong {
        path: PathBuf,
        line: u64,
        limit: usize,
    },
    #[error("{} cannot be read: {error}", path.display())]
    Read {
        path: PathBuf,
        error: roverlog_core::error::Error,
    },
}

impl LogProblem {
    fn from_core(path: &Path, e: roverlog_core::error::Error) -> LogProblem {
        use roverlog_core::error::Error;
        match e {
            Error::EventLine { path, line, error } => LogProblem::Unparsable { path, line, error },
            Error::EventLineTooLong { path, line, limit } => {
                LogProblem::TooLong { path, line, limit }
            }
            error => LogProblem::Read {
                path: path.to_path_buf(),
                error,
            },
        }
    }
}

/// Whether a process holds an exclusive `flock` on `dir` (the daemon's lock on its
/// `data_root`).
pub fn locked_by_daemon(dir: &Path) -> bool {
    let Ok(f) = std::fs::File::open(dir) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; released when `f` closes.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Whether the file at `path` ends in a line without its newline (a write a crash tore).
fn torn_tail(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut b = [0u8];
    len > 0 && f.read_exact_at(&mut b, len - 1).is_ok() && b[0] != b'\n'
}

/// The state of the trace at `dir`. A line of its event log that is not an event makes it
/// [`TraceState::Unreadable`] (reported, not uploaded), except a last line without its
/// newline: a crash tore that write, and the whole lines before it decide.
pub fn trace_state(dir: &Path) -> TraceState {
    let log = roverlog_core::format::events::events_path(dir);
    let reader = match EventReader::open(dir) {
        Ok(r) => r,
        Err(_) if !log.exists() => return TraceState::Sealed,
        Err(e) => return TraceState::Unreadable(LogProblem::from_core(&log, e)),
    };
    let (mut last_start, mut last_stop) = (None, None);
    for (k, line) in reader.enumerate() {
        match line {
            Ok(l) if l.event.kind() == "start" => last_start = Some(k),
            Ok(l) if l.event.kind() == "stop" => last_stop = Some(k),
            Ok(_) => {}
            Err(e) => return TraceState::Unreadable(LogProblem::from_core(&log, e)),
        }
    }
    match (last_start, last_stop) {
        (None, _) => TraceState::Sealed,
        (Some(a), Some(b)) if b > a => TraceState::Sealed,
        _ => {
            let root = dir.parent().unwrap_or(Path::new(".")).to_path_buf();
            if locked_by_daemon(&root) {
                TraceState::Recording { data_root: root }
            } else {
                TraceState::Unfinished {
                    torn_tail: torn_tail(&log),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_with(events: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let t = root.path().join("t");
        std::fs::create_dir_all(t.join("_roverlog")).unwrap();
        std::fs::write(t.join("_roverlog/events.jsonl"), events).unwrap();
        root
    }

    const START: &str =
        r#"{"t":1.0,"event":"start","trace":"t","reason":"command","label":null,"sensors":[]}"#;
    const STOP: &str = r#"{"t":2.0,"event":"stop","trace":"t","reason":"command","sensors":{}}"#;

    #[test]
    fn a_stop_after_the_last_start_seals() {
        let r = trace_with(&format!("{START}\n{STOP}\n"));
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Sealed
        ));
    }

    #[test]
    fn no_stop_and_no_daemon_is_unfinished() {
        let r = trace_with(&format!("{START}\n{STOP}\n{START}\n"));
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Unfinished { torn_tail: false }
        ));
    }

    /// A crash tore the `stop` being written: the trace is one a crash cut (the daemon's
    /// recovery drops the torn line and closes it), not an unreadable one.
    #[test]
    fn a_torn_last_line_is_a_crash_not_a_parse_error() {
        let torn = &STOP[..STOP.len() / 2];
        let r = trace_with(&format!("{START}\n{torn}"));
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Unfinished { torn_tail: true }
        ));
        // Zeros a power cut left where the last line was: the same.
        let r = trace_with(&format!("{START}\n{STOP}\n{START}\n\0\0\0\0"));
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Unfinished { torn_tail: true }
        ));
        // After a whole `stop`: sealed by its whole lines.
        let r = trace_with(&format!("{START}\n{STOP}\n\0\0"));
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Sealed
        ));
    }

    /// A whole line (newline and all) that is not an event: unreadable, naming its line.
    #[test]
    fn an_unparsable_line_is_named_by_its_number() {
        let r = trace_with(&format!("{START}\nnot json\n{STOP}\n"));
        let state = trace_state(&r.path().join("t"));
        let TraceState::Unreadable(p) = &state else {
            panic!("{state:?}");
        };
        assert!(matches!(p, LogProblem::Unparsable { line: 2, .. }), "{p:?}");
        let text = p.to_string();
        assert!(
            text.starts_with("line 2 of ") && text.contains("events.jsonl does not parse"),
            "{text}"
        );
    }

    #[test]
    fn no_stop_under_a_locked_root_is_recording() {
        let r = trace_with(&format!("{START}\n"));
        let held = std::fs::File::open(r.path()).unwrap();
        // SAFETY: flock on a descriptor we own, as the daemon does.
        assert_eq!(
            unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Recording { data_root } if data_root == r.path()
        ));
        drop(held);
        assert!(matches!(
            trace_state(&r.path().join("t")),
            TraceState::Unfinished { .. }
        ));
    }

    #[test]
    fn a_trace_without_an_event_log_is_sealed() {
        let r = tempfile::tempdir().unwrap();
        assert!(matches!(trace_state(r.path()), TraceState::Sealed));
    }
}
