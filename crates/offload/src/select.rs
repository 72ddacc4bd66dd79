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
//!   tails cut, a `stop` written) when it next starts: it is reported, never uploaded.
//!
//! The lock is probed with a shared, non-blocking `flock` released at once. A daemon starting
//! in that instant finds its `data_root` locked and refuses to start (as it refuses a second
//! daemon), saying so; it is not left recording into a trace being sent.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use roverlog_core::format::events::EventReader;

/// What a trace is, for offloading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceState {
    Sealed,
    /// A daemon is recording into it (it holds the lock on `data_root`).
    Recording {
        data_root: PathBuf,
    },
    /// Its recording was cut by a crash and not recovered yet.
    Unfinished,
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

/// The state of the trace at `dir`. An event log that cannot be read counts as unfinished
/// (reported, not uploaded).
pub fn trace_state(dir: &Path) -> TraceState {
    let reader = match EventReader::open(dir) {
        Ok(r) => r,
        Err(_) if !roverlog_core::format::events::events_path(dir).exists() => {
            return TraceState::Sealed
        }
        Err(_) => return TraceState::Unfinished,
    };
    let (mut last_start, mut last_stop) = (None, None);
    for (k, line) in reader.enumerate() {
        match line {
            Ok(l) if l.event.kind() == "start" => last_start = Some(k),
            Ok(l) if l.event.kind() == "stop" => last_stop = Some(k),
            Ok(_) => {}
            Err(_) => return TraceState::Unfinished,
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
                TraceState::Unfinished
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
        assert_eq!(trace_state(&r.path().join("t")), TraceState::Sealed);
    }

    #[test]
    fn no_stop_and_no_daemon_is_unfinished() {
        let r = trace_with(&format!("{START}\n{STOP}\n{START}\n"));
        assert_eq!(trace_state(&r.path().join("t")), TraceState::Unfinished);
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
        assert_eq!(
            trace_state(&r.path().join("t")),
            TraceState::Recording {
                data_root: r.path().to_path_buf()
            }
        );
        drop(held);
        assert_eq!(trace_state(&r.path().join("t")), TraceState::Unfinished);
    }

    #[test]
    fn a_trace_without_an_event_log_is_sealed() {
        let r = tempfile::tempdir().unwrap();
        assert_eq!(trace_state(r.path()), TraceState::Sealed);
    }
}
