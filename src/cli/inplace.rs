//! The reading verbs on `s3://` paths (`info`, `validate`, `cat`, `list`; `export` reads
//! through the same seam, src/cli/export.rs): the trace read
//! where it lies, by range requests (`roverlog_core::remote` over `roverlog_store`), the
//! store's settings from the `AWS_*` variables (docs/offload.md). Local paths keep the mapped
//! readers; each verb hands a path here when it names `s3://`.

use std::path::Path;

use anyhow::{bail, Result};
use serde_json::json;

use super::exit::outln;
use super::Outcome;
use roverlog_core::format::{ChannelFormat, TS_CHANNEL};
use roverlog_core::remote::{RemoteChannel, RemoteError, RemoteSensor, RemoteTrace};
use roverlog_store::{open_trace, Store};

/// The URL when `path` names object storage (`s3://...`).
pub fn url(path: &Path) -> Option<&str> {
    path.to_str()
        .filter(|s| s.starts_with("s3://"))
        .map(|s| s.trim_end_matches('/'))
}

/// The traces at or below `url` (a trace, or a prefix holding traces: directories with
/// `config.yaml` or a sensor's `meta.json`; a trace's own sub-directories are not searched),
/// as URLs, sorted. One listing.
pub fn traces_below(url: &str) -> Result<Vec<String>> {
    let store = Store::open(url)?;
    let found = roverlog_store::find_traces(&store)?;
    if found.is_empty() {
        bail!("{}: no roverd trace there or below", store.describe());
    }
    Ok(found
        .into_iter()
        .map(|d| match d.as_str() {
            "" => url.to_string(),
            d => format!("{url}/{d}"),
        })
        .collect())
}

pub fn info(url: &str, all: bool, json: bool) -> Result<Outcome> {
    let traces = traces_below(url)?;
    let mut out = Vec::new();
    for t in &traces {
        let (trace, _) = open_trace(t)?;
        out.push(describe(t, &trace, all, json)?);
    }
    if json {
        let v = match (traces.as_slice(), out.pop()) {
            ([one], Some(d)) if one == url => d,
            (_, last) => {
                out.extend(last);
                serde_json::Value::Array(out)
            }
        };
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    }
    Ok(Outcome::Ok)
}

/// A channel's length and, when it holds fewer samples than `ts` counts (or does not open),
/// what is wrong.
fn channel_state(s: &RemoteSensor, name: &str) -> (u64, Option<String>) {
    state_of(s, name, &s.channel(name))
}

/// [`channel_state`] of channel `name` of `s`, opened (or not) as `opened`.
fn state_of(
    s: &RemoteSensor,
    name: &str,
    opened: &Result<RemoteChannel, RemoteError>,
) -> (u64, Option<String>) {
    let counted = s.len();
    match opened {
        Ok(c) if name == TS_CHANNEL || c.len() >= counted => (c.len(), None),
        Ok(c) => {
            let held = format!(
                "{name}: holds {} of the {counted} samples ts counts",
                c.len()
            );
            (c.len(), Some(held))
        }
        Err(e) => (0, Some(e.to_string())),
    }
}

fn describe(url: &str, t: &RemoteTrace, all: bool, json: bool) -> Result<serde_json::Value> {
    let names = if all {
        t.all_sensor_names()
    } else {
        t.sensor_names()
    };
    let mut sensors = Vec::new();
    for name in names {
        let s = t.sensor(name)?;
        let ts = s.timestamps();
        let n = s.len();
        let duration = match (ts.first(), ts.last()) {
            (Some(a), Some(b)) if n > 1 => b - a,
            _ => 0.0,
        };
        let mut channels = Vec::new();
        let mut total = 0;
        for (ch, meta) in &s.meta().channels {
            let bytes = s.channel_bytes(ch);
            total += bytes;
            let (len, damage) = channel_state(&s, ch);
            let raw = len * meta.sample_bytes() as u64;
            let ratio =
                (meta.format.is_fixed_size() && bytes > 0).then(|| raw as f64 / bytes as f64);
            channels.push(json!({
                "name": ch,
                "format": meta.format.as_str(),
                "bytes": bytes,
                "compression_ratio": ratio,
                "bytes_per_second": (duration > 0.0).then(|| bytes as f64 / duration),
                "damage": damage,
            }));
        }
        sensors.push(json!({
            "sensor": name,
            "samples": n,
            "start": ts.first(),
            "duration_s": duration,
            "rate_hz": if duration > 0.0 { (n - 1) as f64 / duration } else { 0.0 },
            "bytes": total,
            "channels": channels,
        }));
    }
    let out = json!({"trace": url, "sensors": sensors});
    if !json {
        outln!("{url}")?;
        for s in &sensors {
            outln!(
                "  {:<16} {:>10} samples {:>10.2} s {:>10.2} Hz {:>14} bytes",
                s["sensor"].as_str().unwrap_or_default(),
                s["samples"],
                s["duration_s"].as_f64().unwrap_or_default(),
                s["rate_hz"].as_f64().unwrap_or_default(),
                s["bytes"],
            )?;
            for c in s["channels"].as_array().into_iter().flatten() {
                outln!(
                    "    {:<14} {:<6} {:>14} bytes",
                    c["name"].as_str().unwrap_or_default(),
                    c["format"].as_str().unwrap_or_default(),
                    c["bytes"],
                )?;
                if let Some(d) = c["damage"].as_str() {
                    outln!("      DAMAGED: {d}")?;
                }
            }
        }
    }
    Ok(out)
}

/// Checks every sensor of every trace at or below `url`: each channel opens and holds what
/// `ts` counts; `deep`: every sample reads (and decodes: `lzmaf` frames, video frames).
/// Returns (sensors checked, sensors with problems).
pub fn validate(url: &str, deep: bool) -> Result<(usize, usize)> {
    let (mut checked, mut bad) = (0, 0);
    for t in traces_below(url)? {
        let (trace, _) = open_trace(&t)?;
        for name in trace.all_sensor_names() {
            checked += 1;
            let problems = match trace.sensor(name) {
                Ok(s) => sensor_problems(&s, deep),
                Err(e) => vec![e.to_string()],
            };
            if problems.is_empty() {
                let n = trace.sensor(name).map(|s| s.len()).unwrap_or(0);
                outln!("{t}/{name}: ok ({n} samples)")?;
            } else {
                bad += 1;
                for p in problems {
                    outln!("{t}/{name}: {p}")?;
                }
            }
        }
    }
    Ok((checked, bad))
}

fn sensor_problems(s: &RemoteSensor, deep: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for (ch, meta) in &s.meta().channels {
        if let ChannelFormat::Other(f) = &meta.format {
            problems.push(format!(
                "{ch}: unchecked ({f} is a format roverlog cannot read)"
            ));
            continue;
        }
        // Opened once: its index read once for both checks.
        let opened = s.channel(ch);
        let (_, damage) = state_of(s, ch, &opened);
        if let Some(d) = damage {
            problems.push(d);
            continue;
        }
        let (Ok(c), true) = (opened, deep) else {
            continue;
        };
        // Small samples (`raw`, `lzmaf`) many to a request: `c.batch_len()`.
        let (n, batch) = (c.len(), c.batch_len().max(1));
        'samples: for a in (0..n).step_by(batch as usize) {
            let samples = match c.get_range(a..(a + batch).min(n)) {
                Ok(s) => s,
                Err(e) => {
                    problems.push(e.to_string());
                    break;
                }
            };
            if meta.format != ChannelFormat::Mjpg {
                continue;
            }
            for (i, b) in (a..).zip(&samples) {
                if let Err(e) = roverlog_core::format::avi::decode_rgb(b) {
                    problems.push(format!("{ch}: frame {i} does not decode: {e}"));
                    break 'samples;
                }
            }
        }
    }
    problems
}

/// `roverlog list s3://bucket/prefix`: every trace below, relative to the prefix.
pub fn list(url: &str) -> Result<Outcome> {
    for t in traces_below(url)? {
        let rel = t.strip_prefix(url).unwrap_or(&t).trim_start_matches('/');
        outln!("{}", if rel.is_empty() { "." } else { rel })?;
    }
    Ok(Outcome::Ok)
}
