//! The durable watermark of a sensor: `<sensor>/.durable`, the count of samples made durable
//! by the last fsync and the boot it happened in. `SensorWriter::sync` rewrites it
//! (atomically) after the channels are fsynced and before the count is reported to anyone.
//!
//! What it is for: after a process crash (kill -9) the page cache keeps everything written,
//! so recovery keeps every whole sample. After a power cut (a different boot) the filesystem
//! may hold samples past the last fsync that are garbage: a file whose new size reached the
//! disk but whose pages did not reads as zeros, and the `raw` format has nothing to tell such
//! a sample from a real one. Recovery then cuts every channel to the watermark: nothing past
//! the last fsync is trusted, nothing before it was lost (found by `tests/torture/powercut.rs`).
//!
//! Upstream readers ignore the file (a sensor is what its `meta.json` declares).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// The watermark's file name inside a sensor directory.
pub const WATERMARK_FILE: &str = ".durable";

/// Environment variable that replaces the kernel's boot id (tests simulate a reboot with it).
pub const BOOT_ID_ENV: &str = "ROVERLOG_BOOT_ID";

/// A sensor's durable watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watermark {
    pub boot: String,
    pub samples: u64,
}

/// The current boot's id (`/proc/sys/kernel/random/boot_id`, or `ROVERLOG_BOOT_ID`).
pub fn current_boot_id() -> String {
    if let Ok(id) = std::env::var(BOOT_ID_ENV) {
        return id;
    }
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

pub fn path(sensor_dir: &Path) -> PathBuf {
    sensor_dir.join(WATERMARK_FILE)
}

fn tmp_path(sensor_dir: &Path) -> PathBuf {
    sensor_dir.join(".durable..tmp")
}

/// Whether `name` is one of the watermark's files (not a sidecar to copy).
pub fn is_watermark_file(name: &std::ffi::OsStr) -> bool {
    name == WATERMARK_FILE || name == ".durable..tmp"
}

/// Reads the watermark; `None` when there is none or it is not one (never trusted then).
pub fn read(sensor_dir: &Path) -> Option<Watermark> {
    let text = fs::read_to_string(path(sensor_dir)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "roverlog-durable 1" {
        return None;
    }
    let boot = lines.next()?.strip_prefix("boot ")?.to_string();
    let samples = lines.next()?.strip_prefix("samples ")?.parse().ok()?;
    (lines.next()? == "end").then_some(Watermark { boot, samples })
}

/// Writes the watermark `samples` for this boot: a temporary file, fsynced, renamed into
/// place. The caller fsyncs the sensor directory afterwards (it does anyway).
pub fn write(sensor_dir: &Path, samples: u64) -> Result<()> {
    let tmp = tmp_path(sensor_dir);
    let text = format!(
        "roverlog-durable 1\nboot {}\nsamples {samples}\nend\n",
        current_boot_id()
    );
    let mut f = fs::File::create(&tmp).at(&tmp)?;
    f.write_all(text.as_bytes()).at(&tmp)?;
    f.sync_data().at(&tmp)?;
    let p = path(sensor_dir);
    fs::rename(&tmp, &p).at(&p)
}

/// The count recovery must not go past: the watermark when the sensor was last synced in
/// another boot (a power cut or a reboot since), else `None` (everything whole is kept).
pub fn cap_after_reboot(sensor_dir: &Path) -> Option<Watermark> {
    read(sensor_dir).filter(|w| w.boot != current_boot_id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damaged_files_are_not_trusted() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read(d.path()), None);
        write(d.path(), 42).unwrap();
        let w = read(d.path()).unwrap();
        assert_eq!((w.samples, w.boot), (42, current_boot_id()));
        assert_eq!(cap_after_reboot(d.path()), None, "same boot: no cap");
        let text = fs::read_to_string(path(d.path())).unwrap();
        for cut in [0, 10, text.len() - 4, text.len() - 2] {
            fs::write(path(d.path()), &text[..cut]).unwrap();
            assert_eq!(read(d.path()), None, "cut at {cut}");
        }
        fs::write(
            path(d.path()),
            "roverlog-durable 1\nboot other\nsamples 7\nend\n",
        )
        .unwrap();
        assert_eq!(cap_after_reboot(d.path()).unwrap().samples, 7);
    }
}
