//! Consistency checking and crash recovery of sensors: the orchestrator over a sensor's
//! channels.
//!
//! A crash can leave a sensor's channels with different sample counts, a torn partial record at
//! the end of a `raw` file, a partial `lzmaf` frame or index entry, or a partial blob file.
//! [`check_sensor`] finds every such problem; [`recover_sensor`] cuts every channel back to the
//! largest count that all channels hold completely, and says exactly what it cut. Recovery is
//! idempotent: a second run finds nothing to cut.
//!
//! What each format's files can suffer and how each is cut lives beside the format
//! (`raw`, `lzma`, `lzmaf::check`, `blob`, `avi::repair`); this module checks what is true of
//! the sensor as a whole (the `ts` channel, counts that agree, the durability watermark) and
//! picks the count every channel is cut to. Findings are [`Problem`] values.

use std::fs;
use std::path::{Path, PathBuf};

use super::avi::repair::{self as avi_repair, AviState};
use super::blob::{self, BlobPlan};
use super::channel::channel_path;
use super::durable;
use super::lzma::{self, LzmaPlan};
use super::lzmaf::check::{self as lzmaf_check, LzmafPlan};
use super::meta::{sync_dir, ChannelFormat, ChannelMeta, SensorMeta, TS_CHANNEL};
pub use super::problem::{ChannelProblem, Cut, DeepProgress, Depth, Problem};
use super::problem::{CutAction, OnFrames};
use super::raw::{self, RawPlan};
use crate::error::{BlobProblem, Result};

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
    pub problems: Vec<Problem>,
    plan: Plan,
}

impl ChannelCheck {
    /// Whether the channel could not be checked at all (a format we do not read): it is
    /// neither counted nor cut, and `validate` says so.
    pub fn unchecked(&self) -> bool {
        matches!(self.plan, Plan::Untouchable) && self.problems.is_empty()
    }
}

/// What recovery must know to cut a channel (each format's plan lives beside it).
#[derive(Debug)]
enum Plan {
    Raw(RawPlan),
    Lzmaf(LzmafPlan),
    Blob(BlobPlan),
    /// A whole-file `.xz` channel: cut by re-encoding its first samples.
    Lzma(LzmaPlan),
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
    pub problems: Vec<Problem>,
    /// Things worth knowing that are not errors (timestamps going backwards: clock steps).
    pub warnings: Vec<Problem>,
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
        let mut out: Vec<String> = self.problems.iter().map(|p| p.to_string()).collect();
        for c in &self.channels {
            out.extend(c.problems.iter().map(|p| format!("{}: {p}", c.name)));
        }
        out
    }
}

/// Checks the sensor in `dir` (reading its `meta.json`).
pub fn check_sensor(dir: &Path, depth: Depth) -> Result<SensorCheck> {
    check_sensor_with_progress(dir, depth, &mut |_| {})
}

/// [`check_sensor`], telling `progress` how far a deep check has got through each channel
/// whose frames it decodes (`lzmaf`, `mjpg`); a structure check reports nothing.
pub fn check_sensor_with_progress(
    dir: &Path,
    depth: Depth,
    progress: &mut dyn FnMut(DeepProgress),
) -> Result<SensorCheck> {
    let meta = SensorMeta::read(dir)?;
    let mut out = SensorCheck {
        dir: dir.to_path_buf(),
        channels: Vec::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    if meta.get(TS_CHANNEL).is_none() {
        out.problems.push(Problem::NoTsChannel);
    }
    for (name, ch) in &meta.channels {
        let mut on_frames = |done, total, bytes| {
            progress(DeepProgress {
                channel: name,
                done,
                total,
                bytes,
            })
        };
        out.channels
            .push(check_channel(dir, name, ch, depth, &mut on_frames)?);
    }
    let counted: Vec<_> = out
        .channels
        .iter()
        .filter(|c| !matches!(c.plan, Plan::Untouchable))
        .collect();
    if counted.iter().any(|c| c.complete != counted[0].complete) {
        let counts = counted
            .iter()
            .map(|c| (c.name.clone(), c.complete))
            .collect();
        out.problems.push(Problem::CountsDiffer { counts });
    }
    if let Some(ts) = meta.get(TS_CHANNEL) {
        if depth == Depth::Deep || ts.format == ChannelFormat::Raw {
            check_timestamps(dir, &mut out)?;
        }
    }
    if let Some(w) = durable::cap_after_reboot(dir) {
        let n = out.consistent_len();
        if n > w.samples {
            out.problems.push(Problem::PastFsync {
                extra: n - w.samples,
                durable: w.samples,
            });
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
        out.problems.push(Problem::TsNotFinite {
            index: i,
            value: ts[i],
        });
    }
    let steps = ts.windows(2).filter(|w| w[1] < w[0]).count();
    if steps > 0 {
        let first = ts.windows(2).position(|w| w[1] < w[0]).unwrap_or(0);
        out.warnings.push(Problem::TsBackwards {
            steps,
            first,
            from: ts[first],
            to: ts[first + 1],
        });
    }
    Ok(())
}

fn check_channel(
    dir: &Path,
    name: &str,
    ch: &ChannelMeta,
    depth: Depth,
    on_frames: OnFrames,
) -> Result<ChannelCheck> {
    let path = channel_path(dir, name);
    let mut problems = Vec::new();
    let p = &mut problems;
    let (complete, disk_bytes, plan) = match &ch.format {
        ChannelFormat::Raw => {
            let c = raw::check(&path, ch.sample_bytes(), p)?;
            (c.complete, c.disk_bytes, Plan::Raw(c.plan))
        }
        ChannelFormat::Lzmaf => {
            let c = lzmaf_check::check(&path, ch.sample_bytes(), depth, p, on_frames)?;
            (c.complete, c.disk_bytes, Plan::Lzmaf(c.plan))
        }
        ChannelFormat::Blob(ext) => {
            let c = blob::check(&path, ext, p)?;
            (c.complete, c.disk_bytes, Plan::Blob(c.plan))
        }
        ChannelFormat::Lzma => {
            let c = lzma::check(&path, ch.sample_bytes(), p)?;
            (c.complete, c.disk_bytes, Plan::Lzma(c.plan))
        }
        ChannelFormat::Mjpg => {
            let c = avi_repair::check(&path, depth, p, on_frames)?;
            let plan = match c.plan {
                Some(s) => Plan::Mjpg(Box::new(s)),
                None => Plan::Untouchable,
            };
            (c.complete, c.disk_bytes, plan)
        }
        ChannelFormat::Other(_) => (
            0,
            crate::io::file_len(&path)?.unwrap_or(0),
            Plan::Untouchable,
        ),
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

/// The outcome of recovering one sensor.
#[derive(Debug)]
pub struct Recovery {
    /// The count every channel holds after recovery.
    pub len: u64,
    /// Every change made, in order; empty when there was nothing to do.
    pub cuts: Vec<Cut>,
    /// Problems recovery does not fix (stray files, channels of formats it cannot read),
    /// left for a person.
    pub left_alone: Vec<ChannelProblem>,
}

/// Cuts every channel of the sensor in `dir` to the count all of them hold completely,
/// creates missing channel files empty, and syncs. Idempotent.
pub fn recover_sensor(dir: &Path) -> Result<Recovery> {
    recover_sensor_to(dir, None)
}

/// [`recover_sensor`], keeping at most `durable` samples when given: after a failed write or
/// fsync nothing past the last good fsync is trusted (fsyncgate: the kernel may have dropped
/// the failed pages, and a later fsync of the same file reports success without them), so the
/// daemon cuts a failed sensor to the count its last good fsync covered.
pub fn recover_sensor_to(dir: &Path, durable: Option<u64>) -> Result<Recovery> {
    let check = check_sensor(dir, Depth::Structure)?;
    let mut target = check.consistent_len();
    let mut cuts = Vec::new();
    if let Some(d) = durable.filter(|&d| d < target) {
        cuts.push(Cut::new(
            durable::path(dir),
            CutAction::FailedWrite {
                durable: d,
                cut: target - d,
            },
        ));
        target = d;
    }
    // After a power cut, nothing past the last fsync is trusted (see `durable`).
    let capped = durable::cap_after_reboot(dir).filter(|w| w.samples < target);
    if let Some(w) = &capped {
        cuts.push(Cut::new(
            durable::path(dir),
            CutAction::PowerCut {
                durable: w.samples,
                cut: target - w.samples,
            },
        ));
        target = w.samples;
    }
    let mut left_alone = Vec::new();
    for ch in check.channels {
        let path = channel_path(dir, &ch.name);
        match &ch.plan {
            Plan::Raw(plan) => plan.recover(&path, target, &mut cuts)?,
            Plan::Lzmaf(plan) => plan.recover(&path, ch.complete, target, &mut cuts)?,
            Plan::Blob(plan) => plan.recover(&path, dir, ch.complete, target, &mut cuts)?,
            Plan::Lzma(plan) => plan.recover(
                &path,
                ch.complete,
                ch.disk_bytes,
                !ch.problems.is_empty(),
                target,
                &mut cuts,
            )?,
            Plan::Mjpg(state) => {
                let meta = SensorMeta::read(dir)?;
                let ch_meta = meta.get(&ch.name).cloned().unwrap_or_else(|| {
                    ChannelMeta::new(ChannelFormat::Mjpg, super::DType::U1, vec![], "")
                });
                if let Some(what) = avi_repair::recover(&path, &ch_meta, state, target)? {
                    cuts.push(Cut::new(&path, what));
                }
            }
            Plan::Untouchable => left_alone.push(ChannelProblem {
                channel: ch.name.clone(),
                problem: Problem::NotRecovered {
                    format: ch.format.as_str().to_string(),
                },
            }),
        }
        // Stray files are not the channel's: recovery reports them and leaves them.
        for problem in ch.problems {
            if matches!(problem, Problem::Blob(BlobProblem::UnexpectedFile { .. })) {
                left_alone.push(ChannelProblem {
                    channel: ch.name.clone(),
                    problem,
                });
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
