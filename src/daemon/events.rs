//! `<trace>/_roverlog/events.jsonl`: what happened while recording, one JSON object per line
//! (start, stop, rotation, drops and sequence gaps with their time span, clock steps, errors,
//! marks). The directory starts with `_`, so upstream readers skip it.
//!
//! Lines are written unbuffered (one `write` each, under a mutex, so lines never interleave)
//! and the file is fsynced when the trace closes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The event log's directory inside a trace.
pub const EVENTS_DIR: &str = "_roverlog";
/// The event log's file name.
pub const EVENTS_FILE: &str = "events.jsonl";

/// Seconds since the epoch, now.
pub fn now_epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// One trace's event log.
pub struct EventLog {
    path: PathBuf,
    /// The file, and whether it may end in a torn line (a crash or a failed write left part
    /// of one): the next line then starts with a newline, so it stays readable on its own.
    file: Mutex<(File, bool)>,
}

impl EventLog {
    /// Opens (appending) `<trace>/_roverlog/events.jsonl`, creating the directory.
    pub fn open(trace: &Path) -> Result<EventLog> {
        let dir = trace.join(EVENTS_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join(EVENTS_FILE);
        let created = !path.exists();
        let file = OpenOptions::new()
            .read(true)
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        if created {
            // New directory entries survive a power cut only once their directory is synced.
            crate::format::meta::sync_dir(&dir)?;
            crate::format::meta::sync_dir(trace)?;
        }
        let torn = last_byte(&file)
            .map_err(|e| Error::io(&path, e))?
            .is_some_and(|b| b != b'\n');
        Ok(EventLog {
            path,
            file: Mutex::new((file, torn)),
        })
    }

    /// Appends `{"t": now, "event": kind, ...fields}`. A failure is logged, not returned:
    /// losing an event line must not stop recording.
    pub fn write(&self, kind: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("t".into(), now_epoch().into());
        m.insert("event".into(), kind.into());
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        let mut line = vec![b'\n'];
        serde_json::to_writer(&mut line, &Value::Object(m)).expect("JSON of a map");
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let line = if f.1 { &line[..] } else { &line[1..] };
        f.1 = false;
        if let Err(e) = f.0.write_all(line) {
            f.1 = true;
            tracing::error!(path = %self.path.display(), "writing an event: {e}");
        }
    }

    /// fsyncs the log (at stop and rotation).
    pub fn sync(&self) {
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.0.sync_data() {
            tracing::error!(path = %self.path.display(), "fsync of the event log: {e}");
        }
    }
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

/// Reads every event of a trace (for tests and tools); unparsable lines are skipped.
pub fn read_events(trace: &Path) -> Vec<Value> {
    let path = trace.join(EVENTS_DIR).join(EVENTS_FILE);
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
