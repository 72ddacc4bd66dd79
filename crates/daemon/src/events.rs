//! Writing `<trace>/_roverlog/events.jsonl`: what happened while recording, one JSON object
//! per line (start, stop, rotation, drops and sequence gaps with their time span, clock
//! steps, errors, marks). The lines are [`Event`]s, described and read in
//! `roverlog_core::format::events`; this is the daemon's side: appending them safely.
//!
//! Lines are written unbuffered (one `write` each, under a mutex, so lines never interleave)
//! and the file is fsynced when the trace closes. A log may have an [`EventObserver`] told
//! of each line written (the live Foxglove feed shows them as they happen).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::poison::LockExt;
use roverlog_core::error::{Error, Result};
use roverlog_core::format::events::EventReader;
pub use roverlog_core::format::events::{ClockStepKind, Event, EventLine, EVENTS_DIR, EVENTS_FILE};

/// Seconds since the epoch, now.
pub fn now_epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Told of every line an [`EventLog`] writes, after it is written. It runs on the writer's
/// thread (the health task, a control command), so it must not wait.
pub type EventObserver = std::sync::Arc<dyn Fn(&EventLine) + Send + Sync>;

/// Bytes the log keeps allocated past its end (`fallocate` with `FALLOC_FL_KEEP_SIZE`), so
/// that the lines reporting a full disk (a sensor's error, the stop) and those written
/// after it (marks) are written on a full disk. Taken again whenever less than half is left.
const RESERVE: u64 = 64 << 10;

/// One trace's event log.
pub struct EventLog {
    path: PathBuf,
    file: Mutex<LogFile>,
    observer: Option<EventObserver>,
}

struct LogFile {
    file: File,
    /// Whether it may end in a torn line (a crash left part of one, or a failed write could
    /// not be undone): the next line then starts with a newline, so it stays readable.
    torn: bool,
    /// Its length: what a failed write is cut back to.
    len: u64,
    /// The end of the space allocated for it (its length when nothing is reserved).
    reserved: u64,
}

impl LogFile {
    /// Allocates [`RESERVE`] bytes past the end when less than half of that is left. Best
    /// effort: a filesystem without `fallocate`, or already full, writes as it can.
    fn reserve(&mut self) {
        if self.reserved >= self.len + RESERVE / 2 {
            return;
        }
        use std::os::fd::AsRawFd;
        // SAFETY: a valid descriptor; KEEP_SIZE allocates blocks without changing the size.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                self.len as libc::off_t,
                RESERVE as libc::off_t,
            )
        };
        if r == 0 {
            self.reserved = self.len + RESERVE;
        }
    }
}

/// Whether the filesystem of `file` has room for the log's reserve several times over.
fn room_for_reserve(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatvfs on a valid descriptor into a zeroed struct it fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) } != 0 {
        return false;
    }
    (st.f_bavail as u64).saturating_mul(st.f_frsize as u64) > 4 * RESERVE
}

impl Drop for EventLog {
    /// Gives back the space reserved past the log's end (the log is complete).
    fn drop(&mut self) {
        let f = self.file.lock_or_recover();
        if f.reserved > f.len {
            let _ = f.file.set_len(f.len);
        }
    }
}

impl EventLog {
    /// Opens (appending) `<trace>/_roverlog/events.jsonl`, creating the directory.
    pub fn open(trace: &Path) -> Result<EventLog> {
        let dir = trace.join(EVENTS_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join(EVENTS_FILE);
        repair(&path)?;
        let created = !path.exists();
        let file = OpenOptions::new()
            .read(true)
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        if created {
            // New directory entries survive a power cut only once their directory is synced.
            roverlog_core::format::meta::sync_dir(&dir)?;
            roverlog_core::format::meta::sync_dir(trace)?;
        }
        let torn = last_byte(&file)
            .map_err(|e| Error::io(&path, e))?
            .is_some_and(|b| b != b'\n');
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let mut log = LogFile {
            file,
            torn,
            len,
            reserved: len,
        };
        log.reserve();
        Ok(EventLog {
            path,
            file: Mutex::new(log),
            observer: None,
        })
    }

    /// This log, telling `observer` of every line it writes.
    pub fn observed(mut self, observer: Option<EventObserver>) -> EventLog {
        self.observer = observer;
        self
    }

    /// Appends `event` at `t` now. A failure is logged, not returned: losing an event line
    /// must not stop recording.
    pub fn write(&self, event: Event) {
        // A `stop` seals the trace (an offload may read the log the moment it is there): the
        // space reserved past the end is given back before it, not after (`set_len` on drop
        // would touch the sealed log's mtime after the fact), unless the disk is nearly full:
        // then the reserve is what the stop line is written into, and it goes on drop.
        let last = matches!(event, Event::Stop { .. });
        let mut line = vec![b'\n'];
        let at = EventLine {
            t: now_epoch(),
            event,
        };
        line.extend(at.to_json());
        line.push(b'\n');
        {
            let mut f = self.file.lock_or_recover();
            if last && f.reserved > f.len && room_for_reserve(&f.file) {
                let len = f.len;
                if f.file.set_len(len).is_ok() {
                    f.reserved = len;
                }
            }
            let line = if f.torn { &line[..] } else { &line[1..] };
            match f.file.write_all(line) {
                Ok(()) => {
                    f.torn = false;
                    f.len += line.len() as u64;
                    if last {
                        // Nothing more is reserved: the drop has nothing to give back (or,
                        // on a nearly full disk, what the stop did not use).
                        f.reserved = f.reserved.max(f.len);
                    } else {
                        f.reserve();
                    }
                }
                Err(e) => {
                    tracing::error!(path = %self.path.display(), "writing an event: {e}");
                    // Part of the line may be written: cut it off (shrinking needs no space),
                    // else the next line starts on a line of its own.
                    let len = f.len;
                    if f.file.set_len(len).is_err() {
                        f.torn = true;
                    }
                }
            }
        }
        if let Some(o) = &self.observer {
            o(&at);
        }
    }

    /// fsyncs the log (at stop and rotation).
    pub fn sync(&self) {
        let f = self.file.lock_or_recover();
        if let Err(e) = f.file.sync_data() {
            tracing::error!(path = %self.path.display(), "fsync of the event log: {e}");
        }
    }
}

/// After a crash or a power cut the log may end in a torn line, or hold a stretch the
/// filesystem never wrote (zeros) where a line was: it is rewritten (atomically) with its
/// whole lines only, so every line of an event log is whole JSON. A log without such damage
/// is left untouched.
fn repair(path: &Path) -> Result<()> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let whole = |l: &[u8]| serde_json::from_slice::<Value>(l).is_ok_and(|v| v.is_object());
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let (last, body) = lines.split_last().expect("split yields at least one item");
    let damaged = !last.is_empty() || body.iter().any(|l| !l.is_empty() && !whole(l));
    if !damaged {
        return Ok(());
    }
    let mut kept = Vec::with_capacity(bytes.len());
    let mut dropped = 0;
    for l in lines.iter().filter(|l| !l.is_empty()) {
        if whole(l) {
            kept.extend_from_slice(l);
            kept.push(b'\n');
        } else {
            dropped += 1;
        }
    }
    tracing::warn!(path = %path.display(), dropped, "event log had torn lines (a crash): kept the whole ones");
    roverlog_core::format::meta::write_file_atomic(path, &kept)
}

/// The last byte of `file`, `None` when it is empty.
fn last_byte(file: &File) -> std::io::Result<Option<u8>> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut b = [0u8];
    file.read_exact_at(&mut b, len - 1)?;
    Ok(Some(b[0]))
}

/// The events of a trace the daemon decides by (is it stopped, its label): lines that are
/// not events are skipped, as the daemon's next open of the log drops them anyway; a
/// missing or unreadable log has none.
pub fn readable_events(trace: &Path) -> Vec<EventLine> {
    EventReader::open(trace)
        .map(|r| r.filter_map(|e| e.ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod repair_tests {
    use super::*;

    #[test]
    fn a_log_a_power_cut_damaged_keeps_its_whole_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(EVENTS_DIR);
        std::fs::create_dir(&log).unwrap();
        let path = log.join(EVENTS_FILE);
        let mut bytes = b"{\"event\":\"start\"}\n".to_vec();
        bytes.extend([0u8; 40]); // a page the filesystem never wrote
        bytes.extend(b"\n{\"event\":\"mark\"}\n{\"event\":\"dr");
        std::fs::write(&path, &bytes).unwrap();
        let ev = EventLog::open(dir.path()).unwrap();
        ev.write(Event::Stop {
            trace: "t".into(),
            reason: "command".into(),
            sensors: Default::default(),
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let kinds: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(kinds, ["start", "mark", "stop"], "{text:?}");
        // An undamaged log is not rewritten: the same file (a repair renames a new one into
        // place), the same bytes. (Its modification time is no witness: opening and closing
        // a log takes and gives back its reserve, a truncate.)
        use std::os::unix::fs::MetadataExt;
        drop(ev);
        let before = (
            std::fs::metadata(&path).unwrap().ino(),
            std::fs::read(&path).unwrap(),
        );
        EventLog::open(dir.path()).unwrap();
        let after = (
            std::fs::metadata(&path).unwrap().ino(),
            std::fs::read(&path).unwrap(),
        );
        assert!(before == after, "the log was rewritten");
    }
}
