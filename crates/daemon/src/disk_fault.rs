//! A failing disk: the faults the writers met, the `disk_error` alarm's source, and the probe
//! that tells one bad file from a data filesystem that is gone.
//!
//! What happens when a write or fsync of a sensor's files fails (docs/disk-failure.md):
//!
//! 1. The writer gives its files up and cuts them back to the count of the last good fsync
//!    (`format::recover_sensor_to`): after a failed fsync Linux may drop the failed pages and
//!    report the next fsync of the file good (PostgreSQL's "fsyncgate"), so nothing written
//!    since is trusted, and nothing past it is ever acknowledged durable. The fault is
//!    registered here at once ([`Faults::raise`]); the health task raises `disk_error` from
//!    it at its next tick (every `health_interval_ms`, 250 ms by default), naming the file
//!    and the error, on every surface the alarms have.
//! 2. The driver gets the error line and its connection is closed (protocol.md 6.2). When it
//!    reconnects in the same trace, the sensor is resumed at that count: the hello reply's
//!    `samples` is the durable count before the failure, so a driver that kept what was not
//!    acknowledged resends exactly that.
//! 3. The daemon probes the trace's directory ([`probe`]: create, write, fsync and remove a
//!    small file). A disk that answers keeps recording the other sensors; a disk that does
//!    not (a filesystem shut down, a USB disk gone, read-only after an error) stops the
//!    recording with `stopped_reason` "disk error: ..." and the daemon probes `data_root`
//!    every `disk_check_interval_ms`: when it answers again (the same path remounted), a new
//!    trace is started.
//!
//! A fault stays (and its alarm with it) until the sensor's writer opens files again in a
//! trace; the daemon exits with an error at SIGTERM when any fault was met during its run
//! (`roverlog daemon` exit code 1), so a service manager restarts it and the journal says why.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::poison::LockExt;

/// One failed write or fsync of a sensor's files.
#[derive(Debug, Clone, Serialize)]
pub struct Fault {
    pub sensor: String,
    /// What failed: `append`, `flush`, `fsync`, `finish`, `open`.
    pub what: &'static str,
    /// The file the error names, when it names one.
    pub file: Option<PathBuf>,
    /// The operating system's error (`Input/output error (os error 5)`), or the whole error.
    pub error: String,
    /// Its `errno`, when it has one.
    pub errno: Option<i32>,
    /// When it happened (epoch seconds).
    pub at: f64,
    /// The sensor's count made durable by its last good fsync in that trace: what it was cut
    /// back to, and what a reconnecting driver is told it has.
    pub durable: u64,
    /// The trace directory the files were in.
    pub trace: PathBuf,
}

impl Fault {
    /// The fault of `error`, met by `sensor`'s `what` in `trace`.
    pub fn new(
        sensor: &str,
        what: &'static str,
        error: &roverlog_core::Error,
        durable: u64,
        trace: &Path,
    ) -> Fault {
        let io = error.io_error();
        Fault {
            sensor: sensor.to_string(),
            what,
            file: file_of(error),
            error: io.map_or_else(|| error.to_string(), |e| e.to_string()),
            errno: io.and_then(|e| e.raw_os_error()),
            at: crate::events::now_epoch(),
            durable,
            trace: trace.to_path_buf(),
        }
    }

    /// Whether it means the disk is full (ENOSPC, EDQUOT).
    pub fn is_full(&self) -> bool {
        matches!(self.errno, Some(libc::ENOSPC) | Some(libc::EDQUOT))
    }

    /// The `disk_error` alarm's details: file, error, what failed, durable count.
    pub fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file.as_ref().map(|p| p.display().to_string()),
            "error": self.error,
            "errno": self.errno,
            "what": self.what,
            "durable": self.durable,
        })
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(p) => write!(
                f,
                "sensor {}: {} of {}: {}",
                self.sensor,
                self.what,
                p.display(),
                self.error
            ),
            None => write!(f, "sensor {}: {}: {}", self.sensor, self.what, self.error),
        }
    }
}

/// The file `e` is about: the innermost path it carries.
pub fn file_of(e: &roverlog_core::Error) -> Option<PathBuf> {
    use roverlog_core::Error;
    match e {
        Error::Io { path, .. } => Some(path.clone()),
        Error::At { path, inner } => file_of(inner).or_else(|| Some(path.clone())),
        _ => None,
    }
}

/// A fault as [`Faults`] keeps it.
struct Entry {
    fault: Fault,
    /// The sensor's files opened again since.
    over: bool,
    /// The health task has seen it (so its alarm was raised).
    alarmed: bool,
}

/// The faults active now, one per sensor (the latest), shared by the writers (which raise and
/// clear them), the health task (which alarms on them) and `status`. A fault that is over
/// before the health task saw it (a driver that reconnected at once) is still alarmed once.
#[derive(Clone, Default)]
pub struct Faults {
    active: Arc<Mutex<Vec<Entry>>>,
    /// Whether any fault was met since the daemon started (its exit code).
    seen: Arc<AtomicBool>,
}

impl Faults {
    /// Registers `f`, replacing an earlier fault of its sensor.
    pub fn raise(&self, fault: Fault) {
        self.seen.store(true, Relaxed);
        let mut a = self.active.lock_or_recover();
        a.retain(|e| e.fault.sensor != fault.sensor);
        a.push(Entry {
            fault,
            over: false,
            alarmed: false,
        });
    }

    /// The sensor's files are open again: its fault is over.
    pub fn clear(&self, sensor: &str) {
        let mut a = self.active.lock_or_recover();
        for e in a.iter_mut().filter(|e| e.fault.sensor == sensor) {
            e.over = true;
        }
        a.retain(|e| !(e.over && e.alarmed));
    }

    /// Every fault not over, oldest first.
    pub fn all(&self) -> Vec<Fault> {
        let a = self.active.lock_or_recover();
        a.iter()
            .filter(|e| !e.over)
            .map(|e| e.fault.clone())
            .collect()
    }

    /// What the health task alarms on: every fault not over, and those over that it has not
    /// seen yet (given once, then forgotten).
    pub fn for_alarms(&self) -> Vec<Fault> {
        let mut a = self.active.lock_or_recover();
        let out = a.iter().map(|e| e.fault.clone()).collect();
        for e in a.iter_mut() {
            e.alarmed = true;
        }
        a.retain(|e| !e.over);
        out
    }

    /// Whether any fault was met since the daemon started.
    pub fn seen(&self) -> bool {
        self.seen.load(Relaxed)
    }
}

/// Why the data filesystem does not take a write now.
#[derive(Debug, thiserror::Error)]
#[error("probe of {}: {step} failed: {error}", dir.display())]
pub struct ProbeError {
    pub dir: PathBuf,
    /// `create`, `write`, `fsync`, `remove`.
    pub step: &'static str,
    pub error: std::io::Error,
}

/// The probe file's name inside the probed directory (hidden; removed again at once).
pub const PROBE_FILE: &str = ".roverlog-probe";

/// Whether `dir` takes a write now: creates `dir/.roverlog-probe`, writes a block, fsyncs it
/// and removes it. A shut-down or vanished filesystem fails at once (EIO, ENODEV, EROFS), it
/// does not hang; the caller runs it on a blocking thread anyway. A missing `dir` fails: it
/// is never created here, since a data root that vanished is most often a disk no longer
/// mounted, and recording onto the bare mount point would fill the root filesystem.
pub fn probe(dir: &Path) -> Result<(), ProbeError> {
    use std::io::Write;
    let path = dir.join(PROBE_FILE);
    let err = |step, error| ProbeError {
        dir: dir.to_path_buf(),
        step,
        error,
    };
    let mut f = std::fs::File::create(&path).map_err(|e| err("create", e))?;
    let r = f
        .write_all(&[0u8; 4096])
        .map_err(|e| err("write", e))
        .and_then(|()| f.sync_data().map_err(|e| err("fsync", e)));
    drop(f);
    let removed = std::fs::remove_file(&path).map_err(|e| err("remove", e));
    r.and(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_names_the_innermost_file_and_the_os_error() {
        let io = std::io::Error::from_raw_os_error(libc::EIO);
        let e = roverlog_core::Error::at("/d/t/cam", roverlog_core::Error::io("/d/t/cam/x", io));
        let f = Fault::new("cam", "fsync", &e, 7, Path::new("/d/t"));
        assert_eq!(f.file.as_deref(), Some(Path::new("/d/t/cam/x")));
        assert_eq!(f.errno, Some(libc::EIO));
        assert!(!f.is_full());
        assert!(f.error.contains("os error 5"), "{}", f.error);
        assert_eq!(
            f.to_string(),
            format!("sensor cam: fsync of /d/t/cam/x: {}", f.error)
        );
        assert_eq!(f.details()["durable"], 7);
    }

    #[test]
    fn faults_keep_the_latest_per_sensor_and_remember_that_one_was_seen() {
        let faults = Faults::default();
        assert!(!faults.seen());
        let io = |n| roverlog_core::Error::io("/x", std::io::Error::from_raw_os_error(n));
        faults.raise(Fault::new("a", "fsync", &io(libc::EIO), 1, Path::new("/t")));
        faults.raise(Fault::new(
            "a",
            "append",
            &io(libc::ENOSPC),
            2,
            Path::new("/t"),
        ));
        faults.raise(Fault::new("b", "flush", &io(libc::EIO), 3, Path::new("/t")));
        let all = faults.all();
        assert_eq!(all.len(), 2);
        assert!(all[0].is_full() && all[0].sensor == "a");
        assert_eq!(faults.for_alarms().len(), 2);
        faults.clear("a");
        assert_eq!(faults.all().len(), 1);
        assert_eq!(faults.for_alarms().len(), 1, "seen: forgotten when over");
        // Over before the health task saw it: still given to it once.
        faults.raise(Fault::new("c", "fsync", &io(libc::EIO), 4, Path::new("/t")));
        faults.clear("c");
        faults.clear("b");
        assert!(faults.all().is_empty());
        let alarmed: Vec<String> = faults.for_alarms().into_iter().map(|f| f.sensor).collect();
        assert_eq!(alarmed, ["c"]);
        assert!(faults.for_alarms().is_empty());
        assert!(faults.seen());
    }

    #[test]
    fn the_probe_passes_on_a_usable_directory_and_names_the_step_that_fails() {
        let d = tempfile::tempdir().unwrap();
        probe(d.path()).unwrap();
        assert!(!d.path().join(PROBE_FILE).exists());
        let gone = d.path().join("gone");
        let e = probe(&gone).unwrap_err();
        assert_eq!(e.step, "create");
        assert!(e.to_string().contains("gone"), "{e}");
        assert!(!gone.exists(), "never created");
    }
}
