//! `roverlog extract <src> <dst> --start/--end/--length [--relative | --epoch]`: a time
//! window of a trace into a new trace (upstream `roverd extract`, with its rules: the window
//! lives in the span from the latest first timestamp over sensors to the earliest last one;
//! two of start, end and length; per sensor the samples `searchsorted(ts, [start, end])`).
//!
//! Times are offsets in seconds from the span's start by default (negative ones count back
//! from its end, as upstream's help text promises); `--relative` makes them fractions of the
//! span, exactly as upstream computes them; `--epoch` makes them epoch seconds (what
//! upstream's code compares when `--relative` is not given). Every channel format is copied
//! without re-encoding; `config.yaml`, other top-level files and each sensor's sidecar files
//! (`lidar.json`, ...) are copied too. An existing `dst` is refused; a failure leaves nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::outln;
use super::Outcome;
use roverlog_core::format::copy::{copy_trace, TracePlan};
use roverlog_core::format::Trace;

#[derive(Args)]
pub struct ExtractArgs {
    /// The trace to cut a window from.
    pub src: PathBuf,
    /// The trace to create (must not exist).
    pub dst: PathBuf,
    /// Window start (see the time rules above).
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Window end (exclusive).
    #[arg(long, allow_negative_numbers = true)]
    pub end: Option<f64>,
    /// Window length.
    #[arg(long)]
    pub length: Option<f64>,
    /// Times are fractions of the span (0 = its start, 1 = its end), as upstream's `--relative`.
    #[arg(long, conflicts_with = "epoch")]
    pub relative: bool,
    /// Times are epoch seconds.
    #[arg(long)]
    pub epoch: bool,
}

/// The window `[start, end)` in epoch seconds for span `[t0, t1]`.
pub fn window(a: &ExtractArgs, t0: f64, t1: f64) -> Result<(f64, f64)> {
    let (start, end) = match (a.start, a.end, a.length) {
        (Some(s), Some(e), None) => (s, e),
        (Some(s), None, Some(l)) => (s, s + l),
        (None, Some(e), Some(l)) => (e - l, e),
        _ => bail!("give exactly two of --start, --end and --length"),
    };
    for (what, v) in [("start", start), ("end", end)] {
        if !v.is_finite() {
            bail!("--{what} is not a finite number ({v})");
        }
    }
    let at = |v: f64| {
        if a.relative {
            t0 + v * (t1 - t0)
        } else if a.epoch {
            v
        } else if v < 0.0 {
            t1 + v
        } else {
            t0 + v
        }
    };
    let (s, e) = (at(start), at(end));
    if s >= e {
        bail!("empty window: it starts at {s} and ends at {e} (epoch seconds)");
    }
    Ok((s, e))
}

pub fn extract(args: ExtractArgs) -> Result<Outcome> {
    let trace = Trace::open(&args.src)?;
    let mut all = Vec::new();
    for s in trace.sensors()? {
        let ts = s.timestamps()?;
        all.push((s.name().to_string(), ts));
    }
    let spans: Vec<(f64, f64)> = all
        .iter()
        .filter(|(_, ts)| !ts.is_empty())
        .map(|(_, ts)| (ts[0], ts[ts.len() - 1]))
        .collect();
    if spans.is_empty() {
        bail!("{}: no sensor holds a sample", args.src.display());
    }
    let t0 = spans.iter().map(|s| s.0).fold(f64::MIN, f64::max);
    let t1 = spans.iter().map(|s| s.1).fold(f64::MAX, f64::min);
    if t0 > t1 {
        bail!(
            "{}: the sensors do not overlap in time (latest start {t0}, earliest end {t1})",
            args.src.display()
        );
    }
    let (start, end) = window(&args, t0, t1)?;
    let mut ranges = BTreeMap::new();
    for (name, ts) in &all {
        let a = ts.partition_point(|&t| t < start) as u64;
        let b = ts.partition_point(|&t| t < end) as u64;
        ranges.insert(name.clone(), a..b.max(a));
    }
    if ranges.values().all(|r| r.is_empty()) {
        bail!("the window [{start}, {end}) holds no sample of any sensor (span {t0} .. {t1})");
    }
    let plan = TracePlan {
        ranges,
        formats: BTreeMap::new(),
        copy_events: false,
    };
    let pb = super::progress::bar("extract", "samples");
    let done = copy_trace(&args.src, &args.dst, &plan, |d, t| {
        pb.set_length(t);
        pb.set_position(d);
    })
    .with_context(|| {
        format!(
            "extracting {} into {}",
            args.src.display(),
            args.dst.display()
        )
    })?;
    pb.finish_and_clear();
    outln!(
        "{}: window [{start:.6}, {end:.6}) of span [{t0:.6}, {t1:.6}]",
        args.dst.display()
    )?;
    for (name, n) in done {
        outln!("  {name}: {n} samples")?;
    }
    Ok(Outcome::Ok)
}
