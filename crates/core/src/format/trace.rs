//! A trace: a directory of sensors (sub-directories holding `meta.json`), usually with a
//! `config.yaml` at its root, which upstream uses to discover traces.

use std::fs;
use std::path::{Path, PathBuf};

use super::meta::META_FILE;
use super::sensor::Sensor;
use crate::error::{Error, IoContext, Result};

/// The file upstream discovers traces by.
pub const CONFIG_FILE: &str = "config.yaml";

/// A trace directory opened for reading.
pub struct Trace {
    dir: PathBuf,
    /// Sensor directory names, sorted, virtual ones included.
    names: Vec<String>,
}

impl Trace {
    /// Opens `dir`, which must hold `config.yaml` or at least one sensor.
    pub fn open(dir: &Path) -> Result<Trace> {
        if !dir.is_dir() {
            return Err(Error::NotA {
                path: dir.to_path_buf(),
                expected: "trace directory",
            });
        }
        let names = sensor_dirs(dir)?;
        if names.is_empty() && !dir.join(CONFIG_FILE).exists() {
            return Err(Error::NotA {
                path: dir.to_path_buf(),
                expected: "trace (no config.yaml and no sensor directory with meta.json)",
            });
        }
        Ok(Trace {
            dir: dir.to_path_buf(),
            names,
        })
    }

    /// The trace's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Names of the real (non-virtual) sensors, sorted.
    pub fn sensor_names(&self) -> Vec<&str> {
        self.names
            .iter()
            .filter(|n| !n.starts_with('_'))
            .map(String::as_str)
            .collect()
    }

    /// Names of every sensor, virtual ones (`_name`) included.
    pub fn all_sensor_names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// Opens sensor `name`.
    pub fn sensor(&self, name: &str) -> Result<Sensor> {
        Sensor::open(&self.dir.join(name))
    }

    /// Opens every real sensor.
    pub fn sensors(&self) -> Result<Vec<Sensor>> {
        self.sensor_names()
            .into_iter()
            .map(|n| self.sensor(n))
            .collect()
    }
}

/// Sorted names of the sub-directories of `dir` that hold `meta.json`.
pub fn sensor_dirs(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        if path.is_dir() && path.join(META_FILE).is_file() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Whether `dir` looks like a trace: `config.yaml` or a sensor sub-directory.
pub fn is_trace(dir: &Path) -> bool {
    dir.is_dir()
        && (dir.join(CONFIG_FILE).is_file()
            || sensor_dirs(dir).map(|s| !s.is_empty()).unwrap_or(false))
}

/// Every trace at or below `root`, sorted; a trace's own sub-directories are not searched.
/// Symlinked directories are not followed (no loops).
pub fn find_traces(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if is_trace(&dir) {
            out.push(dir);
            continue;
        }
        for entry in fs::read_dir(&dir).at(&dir)? {
            let entry = entry.at(&dir)?;
            if entry.file_type().at(&entry.path())?.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}
