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

use super::avi::repair::{self as avi_repair, AviState};
use super::blob;
use super::channel::channel_path;
use super::durable;
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

impl ChannelCheck {
    /// Whether the channel could not be checked at all (a format we do not read): it is
    /// neither counted nor cut, and `validate` says so.
    pub fn unchecked(&self) -> bool {
        matches!(self.plan, Plan::Untouchable) && self.problems.is_empty()
    }
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
        /// Offsets of the channel's whole frames (index prefix plus re-found frames).
        good: Vec<u64>,
        /// How many of those frames the index listed.
        indexed: u64,
        data_len: u64,
        index_len: u64,
        exists: bool,
    },
    Blob {
        ext: String,
        extra: Vec<PathBuf>,
        exists: bool,
    },
    /// A whole-file `.xz` channel: cut by re-encoding its first samples.
    Lzma { exists: bool, sample_bytes: usize },
    /// An `mjpg` video: recovery rewrites its trailer for the kept frames.
    Mjpg(Box<AviState>),
    /// Formats we cannot read, and `mjpg` files that are not AVI: neither counted nor cut.
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

    /// The channels that could not be checked (see [`ChannelCheck::unchecked`]).
    pub fn unchecked(&self) -> Vec<&ChannelCheck> {
        self.channels.iter().filter(|c| c.unchecked()).collect()
    }

    /// Whether no problem was found (unchecked channels are not problems: see
    /// [`SensorCheck::unchecked`]).
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
    if let Some(w) = durable::cap_after_reboot(dir) {
        let n = out.consistent_len();
        if n > w.samples {
            out.problems.push(format!(
                "{} sample(s) past the last fsync ({} samples durable) were written before a power cut or reboot: they may be garbage (recover cuts them)",
                n - w.samples,
                w.samples
            ));
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
            // Counting means decompressing (streamed, constant memory): a whole-file channel
            // has no other way to tell its length.
            let size = file_len(&path)?;
            let mut n = 0;
            match size {
                None => problems.push("channel file is missing".into()),
                Some(_) => {
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
            }
            let exists = size.is_some();
            (
                n,
                size.unwrap_or(0),
                Plan::Lzma {
                    exists,
                    sample_bytes: ch.sample_bytes(),
                },
            )
        }
        ChannelFormat::Mjpg => {
            let state = AviState::read(&path)?;
            let (n, found) = state.summary();
            problems.extend(found);
            if depth == Depth::Deep {
                problems.extend(avi_repair::deep_check(&path, &state)?);
            }
            let plan = match state {
                AviState::Foreign(_) => Plan::Untouchable,
                s => Plan::Mjpg(Box::new(s)),
            };
            (n, file_len(&path)?.unwrap_or(0), plan)
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
    let exists = data_len.is_some();
    let (data_len, index_len) = (data_len.unwrap_or(0), index_len.unwrap_or(0));
    // Read once: a file growing meanwhile must not make the length and the bytes disagree.
    let index_bytes = lzmaf::read_index_bytes(&index)?;
    let index_len = index_len.min(index_bytes.len() as u64);
    let mut good = lzmaf::trusted_prefix(
        &index_bytes[..index_len as usize],
        data_len,
        exists,
        problems,
    );
    let mut data = None;
    if depth == Depth::Deep && good.len() > 1 {
        let bytes = fs::read(path).at(path)?;
        for k in 0..good.len() - 1 {
            let frame = &bytes[good[k] as usize..good[k + 1] as usize];
            let bad = match lzma::decompress(frame, sample_bytes, path) {
                Ok(v) if v.len() == sample_bytes => None,
                Ok(v) => Some(format!(
                    "decompresses to {} bytes, expected {sample_bytes}",
                    v.len()
                )),
                Err(e) => Some(format!("does not decompress: {e}")),
            };
            if let Some(why) = bad {
                problems.push(format!("frame {k} {why}"));
                good.truncate(k + 1);
                break;
            }
        }
        data = Some(bytes);
    }
    let indexed = good.len() as u64 - 1;
    let end = *good.last().unwrap_or(&0);
    let mut reindexed = 0;
    if end < data_len {
        // Frames past the index: whole ones (a crash between data and index, or a lost
        // index) are found by their xz framing and kept; the rest is a torn frame.
        let bytes = match data {
            Some(b) => b,
            None => fs::read(path).at(path)?,
        };
        for e in lzmaf::scan_frames(&bytes[end as usize..], sample_bytes) {
            good.push(end + e as u64);
            reindexed += 1;
        }
        if reindexed > 0 {
            problems.push(format!(
                "{reindexed} whole frame(s) past the index (their offsets were lost; recover re-indexes them)"
            ));
        }
        let torn = data_len - *good.last().unwrap_or(&0);
        if torn > 0 {
            problems.push(format!(
                "{torn} bytes of data past the last whole frame (a torn frame)"
            ));
        }
    }
    let complete = good.len() as u64 - 1;
    let plan = Plan::Lzmaf {
        good,
        indexed,
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
    /// Problems recovery does not fix (stray files, channels of formats it cannot read such
    /// as `mjpg`), left for a person.
    pub left_alone: Vec<String>,
}

/// Cuts every channel of the sensor in `dir` to the count all of them hold completely,
/// creates missing channel files empty, and syncs. Idempotent.
pub fn recover_sensor(dir: &Path) -> Result<Recovery> {
    let check = check_sensor(dir, Depth::Structure)?;
    let mut target = check.consistent_len();
    let mut cuts = Vec::new();
    // After a power cut, nothing past the last fsync is trusted (see `durable`).
    let capped = durable::cap_after_reboot(dir).filter(|w| w.samples < target);
    if let Some(w) = &capped {
        cuts.push(Cut {
            path: durable::path(dir),
            what: format!(
                "a power cut or reboot since the last fsync: keeping the {} samples made durable, cutting the {} written after them",
                w.samples,
                target - w.samples
            ),
        });
        target = w.samples;
    }
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
                good,
                indexed,
                data_len,
                index_len,
                exists,
            } => {
                let index = lzmaf::index_path(&path);
                let keep = &good[..=target as usize];
                let keep_data = keep[keep.len() - 1];
                if !exists {
                    fs::File::create(&path).at(&path)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: "created empty (was missing)".into(),
                    });
                } else if *data_len > keep_data {
                    truncate(&path, keep_data)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: format!(
                            "cut {} bytes ({} whole frame(s) and {} bytes of a torn frame): {data_len} -> {keep_data} bytes",
                            data_len - keep_data,
                            ch.complete - target,
                            data_len - good[good.len() - 1]
                        ),
                    });
                }
                let want: Vec<u8> = keep.iter().flat_map(|o| o.to_le_bytes()).collect();
                let have = fs::read(&index).unwrap_or_default();
                if have.len() as u64 > want.len() as u64 && have.starts_with(&want) {
                    truncate(&index, want.len() as u64)?;
                    cuts.push(Cut {
                        path: index.clone(),
                        what: format!(
                            "cut {} bytes ({} offset(s), {} torn bytes): {index_len} -> {} bytes",
                            have.len() - want.len(),
                            (have.len() - want.len()) / 8,
                            have.len() % 8,
                            want.len()
                        ),
                    });
                } else if have != want {
                    crate::format::meta::write_file_atomic(&index, &want)?;
                    cuts.push(Cut {
                        path: index.clone(),
                        what: format!(
                            "rewritten with {} offset(s) ({} frame(s) re-indexed from the data; was {index_len} bytes)",
                            keep.len(),
                            target.saturating_sub(*indexed)
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
            Plan::Lzma {
                exists,
                sample_bytes,
            } => {
                if !exists {
                    fs::write(&path, lzma::compress(&[], lzma::DEFAULT_PRESET)).at(&path)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: "created empty (was missing)".into(),
                    });
                } else if ch.complete > target || !ch.problems.is_empty() {
                    let r = lzma::LzmaReader::open(&path, *sample_bytes)?;
                    let mut keep = Vec::new();
                    for sample in r.stream()?.take(target as usize) {
                        keep.extend_from_slice(&sample?);
                    }
                    let old = ch.disk_bytes;
                    let bytes = lzma::compress(&keep, 6);
                    crate::format::meta::write_file_atomic(&path, &bytes)?;
                    cuts.push(Cut {
                        path: path.clone(),
                        what: format!(
                            "re-encoded with its first {target} of {} sample(s): {old} -> {} bytes",
                            ch.complete,
                            bytes.len()
                        ),
                    });
                }
            }
            Plan::Mjpg(state) => {
                let meta = SensorMeta::read(dir)?;
                let ch_meta = meta.get(&ch.name).cloned().unwrap_or_else(|| {
                    ChannelMeta::new(ChannelFormat::Mjpg, super::DType::U1, vec![], "")
                });
                if let Some(what) = avi_repair::recover(&path, &ch_meta, state, target)? {
                    cuts.push(Cut {
                        path: path.clone(),
                        what,
                    });
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
    if capped.is_some() {
        // This boot has seen the cut: the watermark is this boot's again.
        durable::write(dir, target)?;
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
