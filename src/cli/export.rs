//! `roverlog export <trace> <out.mcap> [--sensors a,b] [--start S] [--end E]`: the trace as an
//! MCAP file for Foxglove and Lichtblick (see `roverlog_export` for what each channel
//! becomes). `--start`/`--end` are seconds from the trace's first sample (negative: back from
//! its last). An existing output is refused; a failure leaves no file.
//! `--location SENSOR:latitude=CH[i],longitude=CH[j][,altitude=CH[k]]` (repeatable) also
//! writes that sensor's position as `foxglove.LocationFix` on `/<sensor>/location`, the
//! mapping of the daemon's config `foxglove_location` (`roverlog_export::location`). Without
//! it, a sensor the daemon had a `foxglove_location` for (in the trace's `config.yaml`) gets
//! its fixes as on the live feed; a recorded mapping that does not fit is skipped with a note.
//! Without either, a sensor with channels `latitude` and `longitude` (`roverlog driver gps`)
//! gets its fixes by those names (`location::by_channel_names`).
//! An `s3://bucket/prefix/trace` is read in place (`roverlog_export::source::InPlace` over
//! `roverlog_store`'s range reads, docs/offload.md): the same file as from the local copy.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::exit::outln;
use super::Outcome;
use roverlog_core::format::Trace;
use roverlog_export::location::{self, LocationMapping};
use roverlog_export::source::{InPlace, SensorSource, TraceSource};
use roverlog_export::{export_mcap_from, ExportOptions};

#[derive(Args)]
pub struct ExportArgs {
    /// The trace to export: a directory, or `s3://bucket/prefix/trace` (read in place, the
    /// store's settings from the `AWS_*` variables: docs/offload.md).
    pub trace: PathBuf,
    /// The MCAP file to write (must not exist).
    pub out: PathBuf,
    /// Only these sensors (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub sensors: Vec<String>,
    /// Start of the window, seconds from the trace's first sample (negative: from its last).
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// End of the window (exclusive), same rules.
    #[arg(long, allow_negative_numbers = true)]
    pub end: Option<f64>,
    /// A sensor's position, also written as foxglove.LocationFix on `/<sensor>/location`:
    /// `gps:latitude=pos[0],longitude=pos[1],altitude=pos[2]` (each a channel's element,
    /// `name[index]`, or `name` for a one-element channel; altitude optional). Repeatable.
    /// Without it, the daemon's `foxglove_location` recorded with the trace is used.
    #[arg(long, value_name = "SENSOR:FIELD=ELEMENT,...")]
    pub location: Vec<String>,
}

/// One `--location` value: the sensor and its mapping.
fn location(arg: &str) -> Result<(String, LocationMapping)> {
    let Some((sensor, fields)) = arg.split_once(':') else {
        bail!(
            "--location {arg:?}: expected SENSOR:latitude=CH[i],longitude=CH[j][,altitude=CH[k]]"
        );
    };
    let pairs = fields
        .split(',')
        .map(|p| {
            p.split_once('=').with_context(|| {
                format!("--location {arg:?}: {p:?} is not FIELD=ELEMENT (as latitude=pos[0])")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let m = LocationMapping::from_pairs(sensor, pairs).context("--location")?;
    Ok((sensor.to_owned(), m))
}

pub fn export(args: ExportArgs) -> Result<Outcome> {
    if args.out.exists() {
        bail!(
            "{} already exists (refusing to overwrite it)",
            args.out.display()
        );
    }
    let mut locations = std::collections::BTreeMap::new();
    for arg in &args.location {
        let (sensor, m) = location(arg)?;
        if locations.insert(sensor.clone(), m).is_some() {
            bail!("--location: sensor {sensor:?} given twice");
        }
    }
    match super::inplace::url(&args.trace) {
        Some(url) => {
            let (trace, _) = roverlog_store::open_trace(url)?;
            export_from(&args, &InPlace::new(trace), locations)
        }
        None => export_from(&args, &Trace::open(&args.trace)?, locations),
    }
}

/// The export of the trace `t` reads (local, or in place), with the `--location` mappings.
fn export_from(
    args: &ExportArgs,
    t: &impl TraceSource,
    mut locations: std::collections::BTreeMap<String, LocationMapping>,
) -> Result<Outcome> {
    let names = t.sensor_names();
    for s in args.sensors.iter().chain(locations.keys()) {
        if !names.contains(s) {
            bail!(
                "{}: no sensor {s:?} (sensors: {})",
                t.location(),
                names.join(", ")
            );
        }
    }
    if let Some(s) = locations
        .keys()
        .find(|s| !args.sensors.is_empty() && !args.sensors.contains(s))
    {
        bail!("--location {s}: sensor {s:?} is not exported (add it to --sensors)");
    }
    let exported = |s: &str| args.sensors.is_empty() || args.sensors.iter().any(|x| x == s);
    let mut notes = Vec::new();
    for (sensor, m) in location::recorded(t) {
        if locations.contains_key(&sensor) || !exported(&sensor) || !names.contains(&sensor) {
            continue;
        }
        let fits = m.map_err(anyhow::Error::from).and_then(|m| {
            m.resolve(&sensor, t.sensor(&sensor)?.meta())?;
            anyhow::Ok(m)
        });
        match fits {
            Ok(m) => {
                locations.insert(sensor, m);
            }
            Err(e) => notes.push(format!(
                "skipped {}: the trace's foxglove_location.{e}",
                location::topic(&sensor)
            )),
        }
    }
    // Without either, a sensor with `latitude` and `longitude` channels (`driver gps`).
    for name in &names {
        if exported(name) && !locations.contains_key(name) {
            if let Some(m) = location::by_channel_names(name, t.sensor(name)?.meta()) {
                locations.insert(name.clone(), m);
            }
        }
    }
    let window = if args.start.is_some() || args.end.is_some() {
        let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
        for name in &names {
            let ts = t.sensor(name)?.timestamps()?;
            if let (Some(a), Some(b)) = (ts.first(), ts.last()) {
                first = first.min(*a);
                last = last.max(*b);
            }
        }
        let at = |v: f64| if v < 0.0 { last + v } else { first + v };
        let (a, b) = (
            args.start.map_or(first, at),
            args.end.map_or(f64::INFINITY, at),
        );
        if a >= b {
            bail!("empty window: it starts at {a} and ends at {b} (epoch seconds)");
        }
        Some(a..b)
    } else {
        None
    };
    let opts = ExportOptions {
        sensors: args.sensors.clone(),
        window,
        locations,
    };
    let pb = super::progress::bar("export", "samples");
    let t0 = std::time::Instant::now();
    let report = export_mcap_from(t, &args.out, &opts, |d, t| {
        pb.set_length(t);
        pb.set_position(d);
    })
    .with_context(|| format!("exporting {} to {}", t.location(), args.out.display()))?;
    pb.finish_and_clear();
    let messages = report.topics.iter().map(|(_, n)| n).sum();
    eprintln!(
        "{}",
        super::progress::rate(
            "export",
            messages,
            "messages",
            t0.elapsed().as_secs_f64(),
            None
        )
    );
    for (topic, n) in &report.topics {
        outln!("{topic}: {n} messages")?;
    }
    for s in &report.skipped {
        outln!("skipped {s}")?;
    }
    for n in &notes {
        outln!("{n}")?;
    }
    Ok(Outcome::Ok)
}
