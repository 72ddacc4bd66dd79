//! `roverlog replay` (a dataset pushed into a running daemon) and `roverlog import` (a dataset
//! written straight to a roverd trace).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use super::exit::outln;
use super::Outcome;
use roverlog_client::PlayOptions;
use roverlog_core::gulp::GulpSource;
use roverlog_core::replay::{Source, TraceSource};
use roverlog_core::timestamps::Model;
use roverlog_ros::{self as ros, ImageFormat, RosOptions, RosSource, Stamp};

#[derive(Args)]
pub struct ReplayArgs {
    /// What to replay: a roverd trace, a gulp directory, an L5Kit zarr dataset, or a ROS
    /// recording (rosbag2 directory, `.mcap`, ROS 1 `.bag`; docs/ros.md).
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
    /// For ROS recordings: a sample's time from the message's `header.stamp` (`header`;
    /// messages without a header use the log time), or the time the recorder logged
    /// (received) it (`log`).
    #[arg(long, value_enum, default_value = "header")]
    pub stamp: StampArg,
    /// For ROS recordings: JPEG images (`sensor_msgs/CompressedImage`) as one file per
    /// sample (`jpg`, channel `img`) or one MJPEG video (`mjpg`, channel `video.avi`).
    #[arg(long, value_enum, default_value = "jpg")]
    pub images: ImagesArg,
    /// For ROS recordings: only these topics (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub topics: Vec<String>,
    /// For ROS recordings: a JSON file of per-topic rules (skip a topic, name its sensor and
    /// channels, its own --stamp and --images; docs/ros.md).
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
    /// Threads decoding samples while one reads the source in order (0: every usable CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The dataset: a gulp directory, an L5Kit zarr dataset, a roverd trace, or a ROS
    /// recording (rosbag2 directory, `.mcap`, ROS 1 `.bag`; docs/ros.md).
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
    /// For ROS recordings: a sample's time from the message's `header.stamp` (`header`;
    /// messages without a header use the log time), or the time the recorder logged
    /// (received) it (`log`).
    #[arg(long, value_enum, default_value = "header")]
    pub stamp: StampArg,
    /// For ROS recordings: JPEG images (`sensor_msgs/CompressedImage`) as one file per
    /// sample (`jpg`, channel `img`) or one MJPEG video (`mjpg`, channel `video.avi`).
    #[arg(long, value_enum, default_value = "jpg")]
    pub images: ImagesArg,
    /// For ROS recordings: only these topics (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub topics: Vec<String>,
    /// For ROS recordings: a JSON file of per-topic rules (skip a topic, name its sensor and
    /// channels, its own --stamp and --images; docs/ros.md).
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
    /// Threads decoding samples while one reads the source in order (0: every usable CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum StampArg {
    Header,
    Log,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ImagesArg {
    Jpg,
    Mjpg,
}

/// What the ROS flags ask for.
fn ros_options(
    stamp: StampArg,
    images: ImagesArg,
    topics: &[String],
    map: Option<&Path>,
    threads: usize,
) -> Result<RosOptions> {
    Ok(RosOptions {
        stamp: match stamp {
            StampArg::Header => Stamp::Header,
            StampArg::Log => Stamp::Log,
        },
        images: match images {
            ImagesArg::Jpg => ImageFormat::Jpg,
            ImagesArg::Mjpg => ImageFormat::Mjpg,
        },
        topics: topics.to_vec(),
        map: map.map(ros::TopicMap::read).transpose()?,
        limits: None,
        threads,
    })
}

/// Opens a ROS recording; with `warn`, prints to stderr every topic it leaves out and why.
fn open_ros(
    path: &Path,
    sensors: &[String],
    model: Model,
    opts: RosOptions,
    warn: bool,
) -> Result<RosSource> {
    if !sensors.is_empty() {
        bail!("--sensors applies to roverd traces; for a ROS recording use --topics");
    }
    if model != Model::Raw {
        bail!("--timestamps applies to roverd traces only");
    }
    let pb = super::progress::bar("read", "(bytes, or rows of a .db3)");
    let source = RosSource::open_with_progress(path, opts, |file, done, total| {
        pb.set_prefix(format!("read file {}", file + 1));
        pb.set_length(total);
        pb.set_position(done);
    })?;
    pb.finish_and_clear();
    for s in source.skipped().iter().filter(|_| warn) {
        eprintln!(
            "roverlog: skipped topic {} ({}, {} messages): {}",
            s.topic,
            if s.msgtype.is_empty() {
                "no type"
            } else {
                &s.msgtype
            },
            s.messages,
            s.reason
        );
    }
    if source.sensors().is_empty() {
        bail!("{}: no topic could be imported", path.display());
    }
    Ok(source)
}

/// Opens `path` as whichever kind of source it is.
fn open_source(
    path: &Path,
    sensors: &[String],
    fps: f64,
    model: Model,
    ros: RosOptions,
) -> Result<Box<dyn Source>> {
    let ros_only = !ros.topics.is_empty() || ros.map.is_some();
    if roverlog_core::format::is_trace(path) {
        if ros_only {
            bail!("--topics and --map apply to ROS recordings only");
        }
        return Ok(Box::new(
            TraceSource::open(path, sensors)?.with_timestamps(model),
        ));
    }
    if ros::is_ros_recording(path) {
        return Ok(Box::new(open_ros(path, sensors, model, ros, true)?));
    }
    if model != Model::Raw {
        bail!("--timestamps applies to roverd traces only");
    }
    if ros_only {
        bail!("--topics and --map apply to ROS recordings only");
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
        return Ok(Box::new(roverlog_core::zarr::l5kit::L5KitSource::open(
            path,
        )?));
    }
    bail!(
        "{}: not a roverd trace, gulp directory, L5Kit zarr dataset or ROS recording (rosbag2 directory, .mcap, .bag)",
        path.display()
    )
}

pub fn replay(args: ReplayArgs) -> Result<Outcome> {
    let ros = ros_options(
        args.stamp,
        args.images,
        &args.topics,
        args.map.as_deref(),
        args.threads,
    )?;
    let mut source = open_source(&args.source, &args.sensors, args.fps, args.timestamps, ros)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let opts = PlayOptions {
        rate: (!args.max_speed).then_some(args.rate),
        start: args.start,
        duration: args.duration,
        looped: args.looped,
        threads: args.threads,
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
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(Outcome::Ok);
    }
    outln!(
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
    )?;
    if let (Some(p50), Some(p99), Some(max)) = (late(0.5), late(0.99), late(1.0)) {
        outln!("late against schedule: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms")?;
    }
    for (n, sent, durable) in &r.sensors {
        outln!("  {n:<16} {sent:>10} sent, {durable:>10} durable in the trace")?;
    }
    Ok(Outcome::Ok)
}

pub fn import(args: ImportArgs) -> Result<Outcome> {
    let ros = ros_options(
        args.stamp,
        args.images,
        &args.topics,
        args.map.as_deref(),
        args.threads,
    )?;
    if !roverlog_core::format::is_trace(&args.source) && ros::is_ros_recording(&args.source) {
        return import_ros(args, ros);
    }
    let mut source = open_source(&args.source, &args.sensors, args.fps, args.timestamps, ros)?;
    let pb = super::progress::bar("import", "samples");
    let t0 = std::time::Instant::now();
    let r = roverlog_core::import::import(
        source.as_mut(),
        &args.out,
        &args.source.display().to_string(),
        args.threads,
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
    let samples = r.sensors.iter().map(|(_, n)| n).sum();
    eprintln!(
        "{}",
        super::progress::rate(
            "import",
            samples,
            "samples",
            t0.elapsed().as_secs_f64(),
            None
        )
    );
    for (n, samples) in &r.sensors {
        outln!("{}: {samples} samples", args.out.join(n).display())?;
    }
    Ok(Outcome::Ok)
}

/// A ROS recording into a trace: the topics left out are printed and kept in the trace's
/// events (`import_skipped`).
fn import_ros(args: ImportArgs, opts: RosOptions) -> Result<Outcome> {
    let mut source = open_ros(&args.source, &args.sensors, args.timestamps, opts, false)?;
    let pb = super::progress::bar("import", "samples");
    let r = ros::import(
        &mut source,
        &args.out,
        &args.source.display().to_string(),
        args.threads,
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
    for (i, (n, samples)) in r.written.sensors.iter().enumerate() {
        outln!(
            "{}: {samples} samples (topic {})",
            args.out.join(n).display(),
            source.topic_of(i)
        )?;
    }
    if !r.skipped.is_empty() {
        outln!(
            "{} topic(s) not imported (listed in {} as import_skipped):",
            r.skipped.len(),
            roverlog_core::format::events::events_path(&args.out).display()
        )?;
        for s in &r.skipped {
            outln!(
                "  {} ({}, {} messages): {}",
                s.topic,
                s.msgtype,
                s.messages,
                s.reason
            )?;
        }
    }
    Ok(Outcome::Ok)
}
