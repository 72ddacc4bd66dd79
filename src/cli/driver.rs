//! `roverlog driver KIND`: the rig's sensor drivers (crate roverlog-drivers), one process per
//! driver, each a client of the daemon's ingest socket. This file is only the command line,
//! the signal handlers and the exit codes; docs/drivers.md is the manual.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use roverlog_drivers::camera::{self, CameraOptions, Storage};
use roverlog_drivers::gps;

use super::exit::{Exit, Fail, Outcome};

/// Exit codes: 0 stopped by SIGTERM/SIGINT with every sample durable; 2 an error (the daemon
/// unreachable or refusing the sensor, the camera or gpsd unreachable, the camera not MJPEG,
/// samples not durable within --stop-timeout); 3 the source's stream ended or broke (every
/// sample sent is durable; a service manager restarts the driver).
#[derive(ClapArgs)]
#[command(
    after_help = "Exit codes: 0 stopped by SIGTERM/SIGINT, every sample durable; 2 error \
(printed); 3 the source (camera, gpsd) ended or broke, every sample sent durable (restart me)."
)]
pub struct Args {
    #[command(subcommand)]
    kind: Kind,
}

#[derive(Subcommand)]
enum Kind {
    /// An IP camera's MJPEG over HTTP (multipart/x-mixed-replace): each JPEG passed through
    /// unchanged to a `mjpg` (or `jpg`) channel; parts that are not whole JPEGs are counted
    /// and reported, never stored.
    Camera(CameraArgs),
    /// GPS through gpsd: each TPV report (position, velocity, fix quality, GPS time) one
    /// sample of channels `latitude`, `longitude`, `altitude`, ... that the map shows without
    /// configuration.
    Gps(GpsArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// One MJPEG AVI, channel `video.avi` (upstream's camera).
    Mjpg,
    /// One file per frame, channel `img`.
    Jpg,
}

#[derive(ClapArgs)]
struct CameraArgs {
    /// The stream: http://HOST:PORT/PATH (the port may be left out: 80).
    url: String,
    /// The daemon's ingest socket.
    #[arg(long, default_value = "run/ingest.sock")]
    socket: PathBuf,
    /// The sensor's name in the trace.
    #[arg(long, default_value = "camera")]
    sensor: String,
    /// How frames are stored.
    #[arg(long, value_enum, default_value = "mjpg")]
    format: Format,
    /// The largest part (frame) accepted, in bytes.
    #[arg(long, default_value_t = 16 << 20)]
    max_frame_bytes: usize,
    /// Seconds without a byte from the camera before the stream counts as broken.
    #[arg(long, default_value_t = 5.0)]
    stall_timeout: f64,
    /// At SIGTERM, seconds to wait for every frame to be durable.
    #[arg(long, default_value_t = 10.0)]
    stop_timeout: f64,
}

#[derive(ClapArgs)]
struct GpsArgs {
    /// gpsd's JSON socket, HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:2947")]
    gpsd: String,
    /// The daemon's ingest socket.
    #[arg(long, default_value = "run/ingest.sock")]
    socket: PathBuf,
    /// The sensor's name in the trace.
    #[arg(long, default_value = "gps")]
    sensor: String,
    /// Seconds without a line from gpsd before the connection counts as broken.
    #[arg(long, default_value_t = 30.0)]
    stall_timeout: f64,
    /// At SIGTERM, seconds to wait for every fix to be durable.
    #[arg(long, default_value_t = 10.0)]
    stop_timeout: f64,
}

pub fn main(args: Args) -> Result<Outcome> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .context("installing the signal handlers")
            .fail(Exit::Usage, WHO)?;
    }
    match args.kind {
        Kind::Camera(a) => camera_main(a, stop),
        Kind::Gps(a) => gps_main(a, stop),
    }
}

/// How a driver's errors are printed (docs/drivers.md).
const WHO: &str = "error";

/// A timeout flag that is not a number of seconds.
#[derive(Debug)]
struct BadSeconds {
    flag: &'static str,
    value: f64,
}

impl std::fmt::Display for BadSeconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--{} {}: not a number of seconds", self.flag, self.value)
    }
}

impl std::error::Error for BadSeconds {}

fn seconds(flag: &'static str, value: f64) -> Result<Duration, BadSeconds> {
    Duration::try_from_secs_f64(value).map_err(|_| BadSeconds { flag, value })
}

/// Both timeouts (`--stall-timeout`, `--stop-timeout`).
fn timeouts(stall: f64, stop: f64) -> Result<(Duration, Duration)> {
    let stall = seconds("stall-timeout", stall).fail(Exit::Usage, WHO)?;
    let stop = seconds("stop-timeout", stop).fail(Exit::Usage, WHO)?;
    Ok((stall, stop))
}

fn gps_main(a: GpsArgs, stop: Arc<AtomicBool>) -> Result<Outcome> {
    let mut opts = gps::GpsOptions::new(&a.gpsd, a.socket, &a.sensor);
    (opts.stall_timeout, opts.stop_timeout) = timeouts(a.stall_timeout, a.stop_timeout)?;
    let mut on_bad = |n: u64, e: &gps::TpvError| {
        if n <= 10 || n.is_multiple_of(100) {
            eprintln!("gpsd at {}: line not stored ({n} so far): {e}", a.gpsd);
        }
    };
    let r = gps::run(&opts, stop, &mut on_bad).fail(Exit::Usage, WHO)?;
    eprintln!(
        "gpsd at {}: {} fixes sent, {} of {} durable; {} lines were not readable",
        a.gpsd, r.fixes, r.durable, r.expected, r.bad_lines
    );
    ended(r.ended)
}

fn camera_main(a: CameraArgs, stop: Arc<AtomicBool>) -> Result<Outcome> {
    let mut opts = CameraOptions::new(&a.url, a.socket, &a.sensor);
    opts.storage = match a.format {
        Format::Mjpg => Storage::Mjpg,
        Format::Jpg => Storage::Jpg,
    };
    opts.limits.max_part = a.max_frame_bytes;
    (opts.stall_timeout, opts.stop_timeout) = timeouts(a.stall_timeout, a.stop_timeout)?;
    let mut on_bad = |n: u64, e: &camera::jpeg::NotJpeg| {
        // The first ten, then every hundredth: a broken camera does not flood the journal.
        if n <= 10 || n.is_multiple_of(100) {
            eprintln!("{}: part not stored ({n} so far): {e}", a.url);
        }
    };
    let r = camera::run(&opts, stop, &mut on_bad).fail(Exit::Usage, WHO)?;
    eprintln!(
        "{}: {} frames ({} bytes) sent, {} of {} durable; {} parts were not whole JPEGs",
        a.url, r.frames, r.bytes, r.durable, r.expected, r.not_jpeg
    );
    ended(r.ended)
}

/// A driver's outcome once its report is printed: 0 stopped by a signal, 3 the source ended
/// or broke (`ended`), so that systemd restarts it.
fn ended(ended: Option<impl std::fmt::Display>) -> Result<Outcome> {
    match ended {
        None => Ok(Outcome::Ok),
        Some(e) => Err(anyhow::anyhow!("{e}")).fail(Exit::Unavailable, WHO),
    }
}
