//! `roverlog replay` (a dataset pushed into a running daemon) and `roverlog import` (a dataset
//! written straight to a roverd trace).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::Outcome;
use roverlog_client::PlayOptions;
use roverlog_core::replay::{self, GulpSource, Source, TraceSource};
use roverlog_core::timestamps::Model;

#[derive(Args)]
pub struct ReplayArgs {
    /// What to replay: a roverd trace, a gulp directory or an L5Kit zarr dataset.
    pub source: PathBuf,
    /// The daemon's ingest socket.
    #[arg(long, default_value = "run/ingest.sock")]
    pub socket: PathBuf,
    /// Speed factor against the recorded timestamps (1 = real time).
    #[arg(long, default_value_t = 1.0, conflicts_with = "max_speed")]
    pub rate: f64,
    /// Send as fast as the daemon takes them.
    #[arg(long)]
    pub max_speed: bool,
    /// Seconds after the first timestamp to start at.
    #[arg(long, default_value_t = 0.0)]
    pub start: f64,
    /// Seconds of the source to play.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Only these sensors (comma-separated), for roverd traces.
    #[arg(long, value_delimiter = ',')]
    pub sensors: Vec<String>,
    /// For roverd traces: timestamps as recorded (`raw`), or through upstream's models
    /// `smooth` (jittered camera/IMU/radar receive times) or `discretize` (lidar with dropped
    /// frames), with upstream's default intervals.
    #[arg(long, default_value = "raw")]
    pub timestamps: Model,
    /// Start over at the end until interrupted (Ctrl-C), timestamps continuing.
    #[arg(long = "loop")]
    pub looped: bool,
    /// Frames per second for gulp directories, which store no time.
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The dataset: a gulp directory, an L5Kit zarr dataset or a roverd trace.
    pub source: PathBuf,
    /// The trace to create (must not exist).
    pub out: PathBuf,
    /// Frames per second for gulp directories.
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// Only these sensors (comma-separated), for roverd traces.
    #[arg(long, value_delimiter = ',')]
    pub sensors: Vec<String>,
    /// For roverd traces: timestamps as recorded (`raw`), or through upstream's models
    /// `smooth` (jittered camera/IMU/radar receive times) or `discretize` (lidar with dropped
    /// frames), with upstream's default intervals.
    #[arg(long, default_value = "raw")]
    pub timestamps: Model,
}

/// Opens `path` as whichever kind of source it is.
fn open_source(path: &Path, sensors: &[String], fps: f64, model: Model) -> Result<Box<dyn Source>> {
    if roverlog_core::format::is_trace(path) {
        return Ok(Box::new(
            TraceSource::open(path, sensors)?.with_timestamps(model),
        ));
    }
    if model != Model::Raw {
        bail!("--timestamps applies to roverd traces only");
    }
    if roverlog_core::gulp::is_gulp_dir(path) {
        if !sensors.is_empty() {
            bail!("--sensors applies to roverd traces; a gulp directory has one camera sensor");
        }
        return Ok(Box::new(GulpSource::open(path, fps, 0.0)?));
    }
    if super::cat::is_zarr(path) {
        if !sensors.is_empty() {
            bail!("--sensors applies to roverd traces; an L5Kit dataset gives ego, agents and traffic_light_faces");
        }
        return Ok(Box::new(roverlog_core::replay::L5KitSource::open(path)?));
    }
    bail!(
        "{}: not a roverd trace, gulp directory or L5Kit zarr dataset",
        path.display()
    )
}

pub fn replay(args: ReplayArgs) -> Result<Outcome> {
    let mut source = open_source(&args.source, &args.sensors, args.fps, args.timestamps)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let opts = PlayOptions {
        rate: (!args.max_speed).then_some(args.rate),
        start: args.start,
        duration: args.duration,
        looped: args.looped,
        ..Default::default()
    };
    let pb = super::progress::bar("replay", "samples");
    let r = roverlog_client::play(
        source.as_mut(),
        &args.socket,
        &opts,
        &stop,
        |done, total| {
            pb.set_length(total);
            pb.set_position(done);
        },
    )
    .with_context(|| {
        format!(
            "replaying {} into {}",
            args.source.display(),
            args.socket.display()
        )
    })?;
    pb.finish_and_clear();
    // Every socket is closed: what is left is printing the summary.
    super::quiet_on_closed_stdout();
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    let late = |q: f64| r.late_quantile(q).map(|s| s * 1e3);
    if args.json {
        let sensors: Vec<_> = r
            .sensors
            .iter()
            .map(|(n, sent, durable)| serde_json::json!({"sensor": n, "sent": sent, "durable": durable}))
            .collect();
        let out = serde_json::json!({
            "samples": r.samples, "bytes": r.bytes, "seconds": secs, "loops": r.loops,
            "samples_per_second": r.samples as f64 / secs, "mb_per_second": r.bytes as f64 / secs / 1e6,
            "late_ms": {"p50": late(0.5), "p99": late(0.99), "max": late(1.0)},
            "sensors": sensors,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Outcome::Ok);
    }
    println!(
        "sent {} samples ({:.1} MB) in {:.2} s: {:.0} samples/s, {:.1} MB/s{}",
        r.samples,
        r.bytes as f64 / 1e6,
        secs,
        r.samples as f64 / secs,
        r.bytes as f64 / secs / 1e6,
        if r.loops > 1 {
            format!(", {} loops", r.loops)
        } else {
            String::new()
        }
    );
    if let (Some(p50), Some(p99), Some(max)) = (late(0.5), late(0.99), late(1.0)) {
        println!("late against schedule: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms");
    }
    for (n, sent, durable) in &r.sensors {
        println!("  {n:<16} {sent:>10} sent, {durable:>10} durable in the trace");
    }
    Ok(Outcome::Ok)
}

pub fn import(args: ImportArgs) -> Result<Outcome> {
    let mut source = open_source(&args.source, &args.sensors, args.fps, args.timestamps)?;
    let pb = super::progress::bar("import", "samples");
    let r = replay::import(
        source.as_mut(),
        &args.out,
        &args.source.display().to_string(),
        |done, total| {
            pb.set_length(total);
            pb.set_position(done);
        },
    )
    .with_context(|| {
        format!(
            "importing {} into {}",
            args.source.display(),
            args.out.display()
        )
    })?;
    pb.finish_and_clear();
    for (n, samples) in &r.sensors {
        println!("{}: {samples} samples", args.out.join(n).display());
    }
    Ok(Outcome::Ok)
}
