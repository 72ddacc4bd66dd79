//! `info`, `validate` and `recover` for roverd traces.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::exit::{outln, StdoutError};
use super::Outcome;
use roverlog_core::format::{self, recover_sensor, trace, Depth, Trace};

#[derive(Args)]
pub struct InfoArgs {
    /// The dataset: a roverd trace (or a single sensor directory), a gulp directory, a zarr
    /// group or array, or a directory holding traces (each is described).
    pub path: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Include virtual sensors (names starting with `_`).
    #[arg(long)]
    pub all: bool,
}

#[derive(Args)]
pub struct ValidateArgs {
    /// Traces, gulp directories, or directories to search for traces.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Also decompress every lzmaf frame, decode every video frame strictly (libjpeg-turbo's
    /// warnings about corrupt data count, where it loads) and check every timestamp.
    #[arg(long)]
    pub deep: bool,
    /// Exit 0 even when some channel could not be checked (a format we do not read); such
    /// channels are still listed as unchecked.
    #[arg(long)]
    pub allow_unchecked: bool,
}

#[derive(Args)]
pub struct RecoverArgs {
    /// The trace to repair (or a single sensor directory).
    pub path: PathBuf,
}

/// Sensor directories of `path`: the trace's sensors (virtual ones too when `all`), or `path`
/// itself when it is a sensor directory.
fn sensor_dirs(path: &std::path::Path, all: bool) -> Result<Vec<PathBuf>> {
    if path.join(format::meta::META_FILE).is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let t = Trace::open(path)?;
    let names = if all {
        t.all_sensor_names()
    } else {
        t.sensor_names()
    };
    Ok(names.into_iter().map(|n| path.join(n)).collect())
}

fn human_bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

pub fn info(args: InfoArgs) -> Result<Outcome> {
    if let Some(url) = super::inplace::url(&args.path) {
        return super::inplace::info(url, args.all, args.json);
    }
    if super::cat::is_zarr(&args.path) {
        super::exit::text(&roverlog_core::zarr::describe(&args.path)?.to_string())?;
        return Ok(Outcome::Ok);
    }
    if roverlog_core::gulp::is_gulp_dir(&args.path) {
        let g = roverlog_core::gulp::GulpDirectory::open(&args.path)?;
        super::exit::text(&g.describe().to_string())?;
        return Ok(Outcome::Ok);
    }
    let is_trace =
        args.path.join(format::meta::META_FILE).is_file() || Trace::open(&args.path).is_ok();
    if !is_trace {
        // A data root: every trace below it, as `validate` finds them.
        let traces = trace::find_traces(&args.path)
            .with_context(|| format!("searching {} for traces", args.path.display()))?;
        if traces.is_empty() {
            // Not a dataset, and no trace below: the trace reader's error says why.
            Trace::open(&args.path)?;
        }
        let mut all = Vec::new();
        for t in traces {
            all.push(describe_trace(&t, args.all, args.json)?);
        }
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&all)?)?;
        }
        return Ok(Outcome::Ok);
    }
    let out = describe_trace(&args.path, args.all, args.json)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    }
    Ok(Outcome::Ok)
}

/// Describes one trace (or sensor directory): printed as a table unless `json`; the JSON
/// object is returned either way.
fn describe_trace(path: &std::path::Path, all: bool, json: bool) -> Result<serde_json::Value> {
    let mut sensors_json = Vec::new();
    for dir in sensor_dirs(path, all)? {
        let s = format::Sensor::open(&dir)?;
        let n = s.len()?;
        let ts = s.timestamps()?;
        let duration = match (ts.first(), ts.last()) {
            (Some(a), Some(b)) if n > 1 => b - a,
            _ => 0.0,
        };
        let rate = if duration > 0.0 {
            (n - 1) as f64 / duration
        } else {
            0.0
        };
        let stats = format::stats::channel_stats(&s)?;
        let total: u64 = stats.iter().map(|c| c.disk_bytes).sum();
        let channels: Vec<_> = stats
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "format": c.format,
                    "bytes": c.disk_bytes,
                    "compression_ratio": c.compression_ratio(),
                    "bytes_per_second": (duration > 0.0).then(|| c.disk_bytes as f64 / duration),
                    "damage": c.damage.as_ref().map(ToString::to_string),
                })
            })
            .collect();
        sensors_json.push(json!({
            "sensor": s.name(),
            "samples": n,
            "start": ts.first(),
            "duration_s": duration,
            "rate_hz": rate,
            "bytes": total,
            "channels": channels,
        }));
    }
    let damaged = sensors_json
        .iter()
        .flat_map(|s| s["channels"].as_array().into_iter().flatten())
        .any(|c| !c["damage"].is_null());
    let out = json!({"trace": path, "sensors": sensors_json, "damaged": damaged});
    if json {
        return Ok(out);
    }
    outln!("{}", path.display())?;
    let width = out["sensors"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["channels"].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .map(str::len)
        .max()
        .unwrap_or(0)
        .max(14);
    for s in out["sensors"].as_array().into_iter().flatten() {
        outln!(
            "  {:<16} {:>10} samples {:>10.2} s {:>10.2} Hz {:>12}",
            s["sensor"].as_str().unwrap_or_default(),
            s["samples"],
            s["duration_s"].as_f64().unwrap_or_default(),
            s["rate_hz"].as_f64().unwrap_or_default(),
            human_bytes(s["bytes"].as_f64().unwrap_or_default()),
        )?;
        for c in s["channels"].as_array().into_iter().flatten() {
            let ratio = c["compression_ratio"]
                .as_f64()
                .map(|r| format!("x{r:.2}"))
                .unwrap_or_else(|| "-".into());
            let rate = c["bytes_per_second"]
                .as_f64()
                .map(|r| format!("{}/s", human_bytes(r)))
                .unwrap_or_else(|| "-".into());
            outln!(
                "    {:<width$} {:<6} {:>12} {:>8} {:>14}",
                c["name"].as_str().unwrap_or_default(),
                c["format"].as_str().unwrap_or_default(),
                human_bytes(c["bytes"].as_f64().unwrap_or_default()),
                ratio,
                rate
            )?;
            if let Some(d) = c["damage"].as_str() {
                outln!("      DAMAGED: {d}")?;
            }
        }
    }
    if damaged {
        outln!(
            "  damaged channels: `roverlog validate {p}` says what is wrong, `roverlog recover {p}` \
             cuts each sensor back to the samples all its channels hold",
            p = path.display()
        )?;
    }
    Ok(out)
}

pub fn validate(args: ValidateArgs) -> Result<Outcome> {
    let depth = if args.deep {
        Depth::Deep
    } else {
        Depth::Structure
    };
    let mut bad = 0usize;
    let mut checked = 0usize;
    let mut unchecked = 0usize;
    for root in &args.paths {
        if let Some(url) = super::inplace::url(root) {
            let (c, b) = super::inplace::validate(url, args.deep)?;
            (checked, bad) = (checked + c, bad + b);
            continue;
        }
        if roverlog_core::gulp::is_gulp_dir(root) {
            checked += 1;
            let opts = roverlog_core::gulp::GulpOptions::default();
            let report = roverlog_core::gulp::sanity_check(root, &opts)?;
            if report.is_ok() {
                outln!("{}: {report}", root.display())?;
            } else {
                bad += 1;
                for p in &report.problems {
                    outln!("{}: {p}", root.display())?;
                }
            }
            continue;
        }
        let dirs = if root.join(format::meta::META_FILE).is_file() {
            vec![root.clone()]
        } else {
            let traces = trace::find_traces(root)
                .with_context(|| format!("searching {} for traces", root.display()))?;
            if traces.is_empty() {
                anyhow::bail!("{}: no roverd trace found", root.display());
            }
            let mut dirs = Vec::new();
            for t in traces {
                let names = trace::sensor_dirs(&t)?;
                if names.is_empty() {
                    outln!("{}: ok (no sensors)", t.display())?;
                }
                dirs.extend(names.into_iter().map(|n| t.join(n)));
            }
            dirs
        };
        // Only a deep check reads every byte: worth a bar, per channel (samples decoded of
        // the channel's total, and their rate), its prefix saying which sensor of how many.
        let pb = match depth {
            Depth::Deep => super::progress::bar("validate --deep", "samples"),
            Depth::Structure => indicatif::ProgressBar::hidden(),
        };
        let n_dirs = dirs.len();
        for (i, dir) in dirs.into_iter().enumerate() {
            checked += 1;
            let sensor = dir.file_name().unwrap_or_default().to_string_lossy();
            let mut current = String::new();
            // The frames a channel's decoding got through, and since when: its rate.
            let mut decoded = (std::time::Instant::now(), 0u64, 0u64);
            let rate_of = |channel: &str, (t0, frames, bytes): (std::time::Instant, u64, u64)| {
                if frames > 0 {
                    pb.suspend(|| {
                        eprintln!(
                            "{}",
                            super::progress::rate(
                                &format!("validate --deep {sensor}/{channel} decoded"),
                                frames,
                                "frames",
                                t0.elapsed().as_secs_f64(),
                                Some(bytes),
                            )
                        )
                    });
                }
            };
            let c = format::check_sensor_with_progress(&dir, depth, &mut |p| {
                if p.channel != current {
                    rate_of(&current, decoded);
                    decoded = (std::time::Instant::now(), 0, 0);
                    current = p.channel.to_string();
                    pb.reset();
                    pb.set_length(p.total);
                    pb.set_prefix(format!(
                        "validate --deep [{}/{n_dirs}] {sensor}/{current}",
                        i + 1
                    ));
                }
                pb.set_position(p.done);
                (decoded.1, decoded.2) = (p.done, p.bytes);
            });
            rate_of(&current, decoded);
            // Lines print above the bar, not through it.
            pb.suspend(|| -> Result<(), StdoutError> {
                match c {
                    Ok(c) => {
                        for w in &c.warnings {
                            outln!("{}: warning: {w}", dir.display())?;
                        }
                        for u in c.unchecked() {
                            unchecked += 1;
                            outln!(
                                "{}: {}: unchecked ({} is a format roverlog cannot read)",
                                dir.display(),
                                u.name,
                                u.format.as_str()
                            )?;
                        }
                        if c.is_ok() {
                            outln!("{}: ok ({} samples)", dir.display(), c.consistent_len())?;
                        } else {
                            bad += 1;
                            for p in c.all_problems() {
                                outln!("{}: {p}", dir.display())?;
                            }
                        }
                    }
                    Err(e) => {
                        bad += 1;
                        outln!("{}: {e}", dir.display())?;
                    }
                }
                Ok(())
            })?;
        }
        pb.finish_and_clear();
    }
    if bad > 0 {
        outln!("{bad} of {checked} sensor(s) or dataset(s) have problems (`roverlog recover <trace>` repairs torn tails of roverd traces)")?;
        Ok(Outcome::Problems)
    } else if unchecked > 0 && !args.allow_unchecked {
        outln!("{unchecked} channel(s) could not be checked (`--allow-unchecked` accepts that)")?;
        Ok(Outcome::Problems)
    } else {
        Ok(Outcome::Ok)
    }
}

pub fn recover(args: RecoverArgs) -> Result<Outcome> {
    let mut any = false;
    let mut left = false;
    let dirs = sensor_dirs(&args.path, true)?;
    let pb = super::progress::bar("recover", "sensors");
    pb.set_length(dirs.len() as u64);
    for dir in dirs {
        let r = recover_sensor(&dir).with_context(|| format!("recovering {}", dir.display()))?;
        pb.inc(1);
        // Lines print above the bar, not through it.
        pb.suspend(|| -> Result<(), StdoutError> {
            for cut in &r.cuts {
                any = true;
                outln!("{cut}")?;
            }
            for l in &r.left_alone {
                left = true;
                outln!("{}: left alone: {l}", dir.display())?;
            }
            if !r.cuts.is_empty() {
                outln!("{}: now {} samples in every channel", dir.display(), r.len)?;
            }
            Ok(())
        })?;
    }
    pb.finish_and_clear();
    if !any {
        outln!("{}: nothing to recover", args.path.display())?;
    }
    Ok(if left { Outcome::Problems } else { Outcome::Ok })
}
