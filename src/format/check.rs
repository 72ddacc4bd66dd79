//! Consistency checking and crash recovery of sensors.
//!
//! A crash can leave a sensor's channels with different sample counts, a torn partial record at
//! the end of a `raw` file, a partial `lzmaf` frame or index entry, or a partial blob file.
//! [`check_sensor`] finds every such problem; [`recover_sensor`] cuts every channel back to the
//! largest count that all channels hold completely, and says exactly what it cut. Recovery is
//! idempotent: a second run finds nothing to cut.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use super::blob;
use super::channel::channel_path;
use super::lzma;
use super::lzmaf;
use super::meta::{sync_dir, ChannelFormat, ChannelMeta, SensorMeta, TS_CHANNEL};
use crate::error::{IoContext, Result};

/// How deeply to check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Depth {
    /// Sizes, indexes and file names only (fast: no decompression).
    #[default]
    Structure,
    /// Also decompress every `lzmaf` frame and check its size, and read every timestamp.
    Deep,
}

/// What was found in one channel.
#[derive(Debug)]
pub struct ChannelCheck {
    pub name: String,
    pub format: ChannelFormat,
    /// Samples held completely (a prefix of the channel).
    pub complete: u64,
    /// Bytes on disk (all the channel's files).
    pub disk_bytes: u64,
    /// Problems found (empty when the channel is sound on its own).
    pub problems: Vec<String>,
    plan: Plan,
}

/// What recovery must know to cut a channel.
#[derive(Debug)]
enum Plan {
    Raw {
        sample_bytes: u64,
        size: u64,
        exists: bool,
    },
    Lzmaf {
        offsets: Vec<u64>,
        data_len: u64,
        index_len: u64,
        exists: bool,
    },
    Blob {
        ext: String,
        extra: Vec<PathBuf>,
        exists: bool,
    },
    /// Formats recovery cannot cut (`lzma`, unknown ones).
    Untouchable,
}

/// The result of checking one sensor.
#[derive(Debug)]
pub struct SensorCheck {
    pub dir: PathBuf,
    pub channels: Vec<ChannelCheck>,
    /// Problems of the sensor as a whole (channels that disagree, bad timestamps).
    pub problems: Vec<String>,
    /// Things worth knowing that are not errors (timestamps going backwards: clock steps).
    pub warnings: Vec<String>,
}

impl SensorCheck {
    /// The largest count every channel holds completely.
    pub fn consistent_len(&self) -> u64 {
        self.channels
            .iter()
            .filter(|c| !matches!(c.plan, Plan::Untouchable))
            .map(|c| c.complete)
            .min()
            .unwrap_or(0)
    }

    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.channels.iter().all(|c| c.problems.is_empty())
    }

    /// Every problem, prefixed with its channel.
    pub fn all_problems(&self) -> Vec<String> {
        let mut out = self.problems.clone();
        for c in &self.channels {
            out.extend(c.problems.iter().map(|p| format!("{}: {p}", c.name)));
        }
        out
    }
}

fn file_len(path: &Path) -> Result<Option<u64>> {
    match fs::metadata(path) {
        Ok(m) => Ok(Some(m.len())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::Error::io(path, e)),
    }
}

/// Checks the sensor in `dir` (reading its `meta.json`).
pub fn check_sensor(dir: &Path, depth: Depth) -> Result<SensorCheck> {
    let meta = SensorMeta::read(dir)?;
    let mut out = SensorCheck {
        dir: dir.to_path_buf(),
        channels: Vec::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    if meta.get(TS_CHANNEL).is_none() {
        out.problems.push("no \"ts\" channel in meta.json".into());
    }
    for (name, ch) in &meta.channels {
        out.channels.push(check_channel(dir, name, ch, depth)?);
    }
    let counted: Vec<_> = out
        .channels
        .iter()
        .filter(|c| !matches!(c.plan, Plan::Untouchable))
        .collect();
    if counted.iter().any(|c| c.complete != counted[0].complete) {
        let counts: Vec<String> = counted
            .iter()
            .map(|c| format!("{} {}", c.name, c.complete))
            .collect();
        out.problems.push(format!(
            "channels hold different sample counts: {}",
            counts.join(", ")
        ));
    }
    if let Some(ts) = meta.get(TS_CHANNEL) {
        if depth == Depth::Deep || ts.format == ChannelFormat::Raw {
            check_timestamps(dir, &mut out)?;
        }
    }
    Ok(out)
}

fn check_timestamps(dir: &Path, out: &mut SensorCheck) -> Result<()> {
    let path = channel_path(dir, TS_CHANNEL);
    let Ok(bytes) = fs::read(&path) else {
        return Ok(()); // reported as missing already
    };
    let ts = super::dtype::decode_vec::<f64>(&bytes);
    if let Some(i) = ts.iter().position(|t| !t.is_finite()) {
        out.problems
            .push(format!("ts: sample {i} is not a finite time ({})", ts[i]));
    }
    let steps = ts.windows(2).filter(|w| w[1] < w[0]).count();
    if steps > 0 {
        let first = ts.windows(2).position(|w| w[1] < w[0]).unwrap_or(0);
        out.warnings.push(format!(
            "ts goes backwards {steps} time(s), first after sample {first} ({} -> {})",
            ts[first],
            ts[first + 1]
        ));
    }
    Ok(())
}

fn check_channel(dir: &Path, name: &str, ch: &ChannelMeta, depth: Depth) -> Result<ChannelCheck> {
    let path = channel_path(dir, name);
    let mut problems = Vec::new();
    let (complete, disk_bytes, plan) = match &ch.format {
        ChannelFormat::Raw => {
            let s = ch.sample_bytes() as u64;
            let size = file_len(&path)?;
            if size.is_none() {
                problems.push("channel file is missing".into());
            }
            let size = size.unwrap_or(0);
            if size % s != 0 {
                problems.push(format!(
                    "torn tail: {} bytes past the last whole {s}-byte sample",
                    size % s
                ));
            }
            let exists = path.exists();
            (
                size / s,
                size,
                Plan::Raw {
                    sample_bytes: s,
                    size,
                    exists,
                },
            )
        }
        ChannelFormat::Lzmaf => check_lzmaf(&path, ch.sample_bytes(), depth, &mut problems)?,
        ChannelFormat::Blob(ext) => {
            let exists = path.is_dir();
            if !exists {
                problems.push("channel directory is missing".into());
            }
            let scan = blob::scan(&path, ext)?;
            problems.extend(scan.problems);
            let plan = Plan::Blob {
                ext: ext.clone(),
                extra: scan.extra_samples,
                exists,
            };
            (scan.contiguous, scan.bytes, plan)
        }
        ChannelFormat::Lzma => {
            let size = file_len(&path)?.unwrap_or(0);
            let mut n = 0;
            if depth == Depth::Deep {
                let r = lzma::LzmaReader::open(&path, ch.sample_bytes())?;
                for sample in r.stream()? {
                    match sample {
                        Ok(_) => n += 1,
                        Err(e) => {
                            problems.push(e.to_string());
                            break;
                        }
                    }
                }
            }
            (n, size, Plan::Untouchable)
        }
        ChannelFormat::Other(_) => (0, file_len(&path)?.unwrap_or(0), Plan::Untouchable),
    };
    Ok(ChannelCheck {
        name: name.to_string(),
        format: ch.format.clone(),
        complete,
        disk_bytes,
        problems,
        plan,
    })
}

fn check_lzmaf(
    path: &Path,
    sample_bytes: usize,
    depth: Depth,
    problems: &mut Vec<String>,
) -> Result<(u64, u64, Plan)> {
    let index = lzmaf::index_path(path);
    let data_len = file_len(path)?;
    let index_len = file_len(&index)?;
    if data_len.is_none() {
        problems.push("channel file is missing".into());
    }
    if index_len.is_none() {
        problems.push("offset index file is missing".into());
    }
    let (data_len, index_len) = (data_len.unwrap_or(0), index_len.unwrap_or(0));
    if index_len % 8 != 0 {
        problems.push(format!(
            "index has a torn entry ({} bytes past the last whole offset)",
            index_len % 8
        ));
    }
    let offsets = lzmaf::read_index(&index)?;
    let mut complete = 0u64;
    if offsets.is_empty() {
        if index_len < 8 && data_len > 0 {
            problems.push(format!("{data_len} bytes of data but no offsets"));
        } else if index_len == 0 && path.exists() {
            problems.push("index lacks its leading 0".into());
        }
    } else if offsets[0] != 0 {
        problems.push(format!("first offset is {}, not 0", offsets[0]));
    } else {
        // Frames count while offsets keep increasing and stay inside the data.
        for w in offsets.windows(2) {
            if w[1] < w[0] || w[1] > data_len {
                break;
            }
            complete += 1;
        }
        let listed = offsets.len() as u64 - 1;
        if complete < listed {
            problems.push(format!(
                "index lists {listed} frames but only {complete} lie within the {data_len}-byte data file in order"
            ));
        }
        let end = offsets[complete as usize];
        if end < data_len {
            problems.push(format!(
                "{} bytes of data past the last indexed frame (a torn frame)",
                data_len - end
            ));
        }
        if depth == Depth::Deep && complete > 0 {
            let data = fs::read(path).at(path)?;
            for k in 0..complete as usize {
                let frame = &data[offsets[k] as usize..offsets[k + 1] as usize];
                match lzma::decompress(frame, sample_bytes, path) {
                    Ok(v) if v.len() == sample_bytes => {}
                    Ok(v) => {
                        problems.push(format!(
                            "frame {k} decompresses to {} bytes, expected {sample_bytes}",
                            v.len()
                        ));
                        complete = k as u64;
                        break;
                    }
                    Err(e) => {
                        problems.push(format!("frame {k} does not decompress: {e}"));
                        complete = k as u64;
                        break;
                    }
                }
            }
        }
    }
    let exists = path.exists();
    let plan = Plan::Lzmaf {
        offsets,
        data_len,
        index_len,
        exists,
    };
    Ok((complete, data_len + index_len, plan))
}

/// One change recovery made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub path: PathBuf,
    pub what: String,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// The outcome of recovering one sensor.
#[derive(Debug)]
pub struct Recovery {
    /// The count every channel holds after recovery.
    pub len: u64,
    /// Every change made, in order; empty when there was nothing to do.
    pub cuts: Vec<Cut>,
    /// Problems recovery does not fix (stray files, `lzma` channels), left for a person.
    pub left_alone: Vec<String>,
}

/// Cuts every channel of the sensor in `dir` to the count all of them hold completely,
/// creates missing channel files empty, and syncs. Idempotent.
pub fn recover_sensor(dir: &Path) -> Result<Recovery> {
    let check = check_sensor(dir, Depth::Structure)?;
    let target = check.consistent_len();
    let mut cuts = Vec::new();
    let mut left_alone = Vec::new();
    for ch in &check.channels {
        let path = channel_path(dir, &ch.name);
        match &ch.plan {
            Plan::Raw {
                sample_bytes,
                size,
                exists,
            } => {
                let keep = target * sample_bytes;
                if !exists {
                    fs::File::create(&path).at(&path)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: "created empty (was missing)".into(),
                    });
                } else if *size > keep {
                    truncate(&path, keep)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: cut_text(
                            size / sample_bytes - target,
                            size % sample_bytes,
                            *size,
                            keep,
                        ),
                    });
                }
            }
            Plan::Lzmaf {
                offsets,
                data_len,
                index_len,
                exists,
            } => {
                let index = lzmaf::index_path(&path);
                let keep_data = if offsets.first() == Some(&0) {
                    offsets[target as usize]
                } else {
                    0
                };
                let keep_index = (target + 1) * 8;
                if !exists {
                    fs::File::create(&path).at(&path)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: "created empty (was missing)".into(),
                    });
                } else if *data_len > keep_data {
                    truncate(&path, keep_data)?;
                    let end_of_complete = if offsets.first() == Some(&0) {
                        offsets[ch.complete as usize]
                    } else {
                        0
                    };
                    cuts.push(Cut {
                        path: path.clone(),
                        what: format!(
                            "cut {} bytes ({} whole frame(s) and {} bytes of a torn frame): {data_len} -> {keep_data} bytes",
                            data_len - keep_data,
                            ch.complete - target,
                            data_len - end_of_complete
                        ),
                    });
                }
                if offsets.first() != Some(&0) || *index_len < 8 {
                    crate::format::meta::write_file_atomic(&index, &0u64.to_le_bytes())?;
                    cuts.push(Cut {
                        path: index.clone(),
                        what: format!("rewritten as [0] (was {index_len} bytes)"),
                    });
                } else if *index_len > keep_index {
                    truncate(&index, keep_index)?;
                    cuts.push(Cut {
                        path: index.clone(),
                        what: format!(
                            "cut {} bytes ({} offset(s), {} torn bytes): {index_len} -> {keep_index} bytes",
                            index_len - keep_index,
                            (index_len - keep_index) / 8,
                            index_len % 8
                        ),
                    });
                }
            }
            Plan::Blob { ext, extra, exists } => {
                if !exists {
                    fs::create_dir(&path).at(&path)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: "created empty directory (was missing)".into(),
                    });
                    continue;
                }
                let mut doomed: Vec<PathBuf> = extra.clone();
                for i in target..ch.complete {
                    doomed.push(path.join(blob::sample_name(i, ext)));
                }
                doomed.sort();
                for f in &doomed {
                    fs::remove_file(f).at(f)?;
                    cuts.push(Cut {
                        path: f.clone(),
                        what: "removed".into(),
                    });
                }
                if !doomed.is_empty() {
                    sync_dir(&path)?;
                    sync_dir(dir)?;
                }
                for p in &ch.problems {
                    if p.starts_with("unexpected file") {
                        left_alone.push(format!("{}: {p}", ch.name));
                    }
                }
            }
            Plan::Untouchable => {
                left_alone.push(format!(
                    "{}: {} channel not checked or cut by recovery",
                    ch.name,
                    ch.format.as_str()
                ));
            }
        }
    }
    if !cuts.is_empty() {
        sync_dir(dir)?;
    }
    Ok(Recovery {
        len: target,
        cuts,
        left_alone,
    })
}

fn cut_text(whole: u64, torn: u64, from: u64, to: u64) -> String {
    format!(
        "cut {} bytes ({whole} whole sample(s) and {torn} torn bytes): {from} -> {to} bytes",
        from - to
    )
}

fn truncate(path: &Path, len: u64) -> Result<()> {
    let f = OpenOptions::new().write(true).open(path).at(path)?;
    f.set_len(len).at(path)?;
    f.sync_all().at(path)
}
