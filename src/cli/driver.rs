//! `roverlog driver KIND`: the rig's sensor drivers (crate roverlog-drivers), one process per
//! driver, each a client of the daemon's ingest socket. This file is only the command line,
//! the signal handlers and the exit codes; docs/drivers.md is the manual.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use roverlog_drivers::camera::{self, v4l2, CameraOptions, Storage};
use roverlog_drivers::gps;
use roverlog_drivers::ouster;

use super::exit::{Exit, Fail, Outcome};

/// Exit codes: 0 stopped by SIGTERM/SIGINT with every sample durable; 2 an error (the daemon
/// unreachable or refusing the sensor, the camera or gpsd unreachable, the camera not MJPEG
/// or not a V4L2 capture device or without the mode asked,
/// the lidar's metadata unreadable or its ports taken, samples not durable within
/// --stop-timeout); 3 the source's stream ended or broke (the lidar silent for
/// --stall-timeout; every sample sent is durable; a service manager restarts the driver).
#[derive(ClapArgs)]
#[command(
    after_help = "Exit codes: 0 stopped by SIGTERM/SIGINT, every sample durable; 2 error \
(printed); 3 the source (camera, gpsd, lidar) ended or broke, every sample sent durable \
(restart me)."
)]
pub struct Args {
    #[command(subcommand)]
    kind: Kind,
}

#[derive(Subcommand)]
enum Kind {
    /// A camera's MJPEG, each JPEG passed through unchanged to a `mjpg` (or `jpg`) channel:
    /// a V4L2/UVC camera (/dev/videoN) or an IP camera's MJPEG over HTTP
    /// (multipart/x-mixed-replace); buffers or parts that are not whole JPEGs are counted and
    /// reported, never stored.
    Camera(CameraArgs),
    /// GPS through gpsd: each TPV report (position, velocity, fix quality, GPS time) one
    /// sample of channels `latitude`, `longitude`, `altitude`, ... that the map shows without
    /// configuration.
    Gps(GpsArgs),
    /// An Ouster lidar's UDP packets: frames assembled by frame id into `rng`, `rfl`, `nir`
    /// (lzmaf, beams x columns), only complete ones (incomplete frames are counted and
    /// reported); the IMU packets into a sensor of their own.
    Ouster(OusterArgs),
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
    /// The source: a V4L2 device (/dev/videoN), an MJPEG stream http://HOST:PORT/PATH (the
    /// port may be left out: 80), or replay:DIR (the files of DIR, in name order, each
    /// replayed as one buffer: a stand-in camera for tests and benchmarks).
    #[arg(value_name = "SOURCE")]
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
    /// The largest part (frame) accepted, in bytes (http:// only).
    #[arg(long, default_value_t = 16 << 20)]
    max_frame_bytes: usize,
    /// V4L2: the frame size asked, WIDTHxHEIGHT (default: the camera's largest MJPG size).
    #[arg(long, value_name = "WxH")]
    size: Option<String>,
    /// V4L2: the frame rate asked (default: the highest the size offers); replay: the rate
    /// (default 30).
    #[arg(long)]
    fps: Option<u32>,
    /// V4L2 (and replay): mmap buffers requested.
    #[arg(long)]
    buffers: Option<u32>,
    /// replay: times through the files (0: forever).
    #[arg(long)]
    loops: Option<u64>,
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

#[derive(ClapArgs)]
struct OusterArgs {
    /// The sensor's metadata (sensor_info JSON, as http://SENSOR/api/v1/sensor/metadata
    /// serves it): the packet profile and frame shape.
    #[arg(
        long,
        required_unless_present = "sensor_host",
        conflicts_with = "sensor_host"
    )]
    metadata: Option<PathBuf>,
    /// Fetch the metadata from the sensor instead: http://HOST/api/v1/sensor/metadata
    /// (HOST may carry a :PORT).
    #[arg(long, value_name = "HOST")]
    sensor_host: Option<String>,
    /// The daemon's ingest socket.
    #[arg(long, default_value = "run/ingest.sock")]
    socket: PathBuf,
    /// The lidar's sensor name in the trace.
    #[arg(long, default_value = "lidar")]
    sensor: String,
    /// The IMU's sensor name in the trace (default: the lidar's name + `_imu`).
    #[arg(long)]
    imu_sensor: Option<String>,
    /// Do not read the IMU port.
    #[arg(long)]
    no_imu: bool,
    /// The local address the ports are bound on.
    #[arg(long, default_value = "0.0.0.0")]
    bind: std::net::IpAddr,
    /// The UDP port the sensor sends lidar packets to.
    #[arg(long, default_value_t = 7502)]
    lidar_port: u16,
    /// The UDP port the sensor sends IMU packets to.
    #[arg(long, default_value_t = 7503)]
    imu_port: u16,
    /// The lidar socket's receive buffer, bytes (the kernel caps it at net.core.rmem_max
    /// unless the driver runs with CAP_NET_ADMIN; a warning names both).
    #[arg(long, default_value_t = 32 << 20)]
    rcvbuf: usize,
    /// Seconds without a packet from the sensor before the driver ends (exit code 3).
    #[arg(long, default_value_t = 30.0)]
    stall_timeout: f64,
    /// At SIGTERM, seconds to wait for every frame to be durable.
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
        Kind::Ouster(a) => ouster_main(a, stop),
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

fn ouster_main(a: OusterArgs, stop: Arc<AtomicBool>) -> Result<Outcome> {
    let meta = match (&a.metadata, &a.sensor_host) {
        (Some(path), _) => ouster::Metadata::open(path),
        (None, Some(host)) => ouster::Metadata::fetch(host, Duration::from_secs(10)),
        (None, None) => unreachable!("clap requires one"),
    };
    let meta = meta
        .context("the sensor's metadata")
        .fail(Exit::Usage, WHO)?;
    let mut opts = ouster::OusterOptions::new(a.socket, &a.sensor);
    opts.imu_sensor = match (a.no_imu, a.imu_sensor) {
        (true, _) => None,
        (false, Some(name)) => Some(name),
        (false, None) => opts.imu_sensor,
    };
    if let ouster::metadata::ImuProfile::NotDecoded(profile) = &meta.imu {
        if opts.imu_sensor.take().is_some() {
            eprintln!(
                "warning: {}: IMU packet profile {profile:?} is not decoded (LEGACY is): the IMU \
                 is not recorded",
                meta.source.display()
            );
        }
    }
    (opts.bind, opts.lidar_port, opts.imu_port) = (a.bind, a.lidar_port, a.imu_port);
    opts.rcvbuf = a.rcvbuf;
    (opts.stall_timeout, opts.stop_timeout) = timeouts(a.stall_timeout, a.stop_timeout)?;
    let l = meta.layout;
    eprintln!(
        "{}: {} packets, {} beams x {} columns, lidar on UDP {}:{}",
        meta.source.display(),
        l.profile.name(),
        l.pixels_per_column,
        l.columns_per_frame,
        a.bind,
        a.lidar_port
    );
    let sensor = a.sensor.clone();
    let mut on_event = |e: &ouster::Event| ouster_event(&sensor, e);
    let r = ouster::run(&opts, &meta, stop, &mut on_event).fail(Exit::Usage, WHO)?;
    let c = &r.counts;
    eprintln!(
        "{sensor}: {} packets, {} frames complete, {} incomplete (not stored, {} columns \
         missing), {} missing entirely, {} not packets, {} late; {} frames sent, {} of {} \
         durable; {} dropped while the daemon was behind",
        c.packets,
        c.complete,
        c.incomplete,
        c.missing_columns,
        c.missing_frames,
        c.bad_packets,
        c.late_packets,
        r.frames,
        r.durable,
        r.expected,
        r.queue_full
    );
    if let Some(i) = &r.imu {
        eprintln!(
            "{sensor} IMU: {} packets ({} not IMU packets), {} of {} durable",
            i.packets, i.bad, i.durable, i.expected
        );
        if let Some(e) = &i.ended {
            if r.ended.is_none() {
                // The lidar went on to the signal, but the IMU's recording broke: an error.
                return Err(anyhow::anyhow!("IMU: {e}")).fail(Exit::Usage, WHO);
            }
            eprintln!("error: IMU: {e}");
        }
    }
    ended(r.ended)
}

/// The driver's status lines (the driver already passes on only some of each kind).
fn ouster_event(sensor: &str, e: &ouster::Event) {
    match e {
        ouster::Event::RcvbufCapped {
            addr,
            asked,
            got,
            rmem_max,
        } => eprintln!(
            "warning: UDP {addr}: receive buffer {got} bytes, not the {asked} asked: the kernel \
             caps it at net.core.rmem_max = {rmem_max}; packets will be lost at full rate \
             (sysctl -w net.core.rmem_max={asked}, or run with CAP_NET_ADMIN)"
        ),
        ouster::Event::Incomplete {
            frame_id,
            columns,
            expected,
            count,
        } => eprintln!(
            "{sensor}: frame {frame_id} incomplete, {columns} of {expected} columns: not stored \
             ({count} so far)"
        ),
        ouster::Event::BadPacket { error, count } => {
            eprintln!("{sensor}: datagram not stored ({count} so far): {error}")
        }
        ouster::Event::BadImu { error, count } => {
            eprintln!("{sensor} IMU: datagram not stored ({count} so far): {error}")
        }
        ouster::Event::NoLidarJson(why) => {
            let why = match why {
                ouster::NoLidarJson::TooLarge { bytes, max } => {
                    format!("it is {bytes} bytes, over the {max} a hello's files may hold")
                }
                ouster::NoLidarJson::DaemonTooOld => {
                    "the daemon predates sidecar files (docs/protocol.md 2.6)".to_string()
                }
            };
            eprintln!(
                "warning: {sensor}: the metadata is not written into the trace as {}: {why}; \
                 keep the metadata file with the trace",
                ouster::LIDAR_JSON
            )
        }
    }
}

fn camera_main(a: CameraArgs, stop: Arc<AtomicBool>) -> Result<Outcome> {
    if let Some(dir) = a.url.strip_prefix("replay:") {
        return camera_replay(PathBuf::from(dir), &a, stop);
    }
    if !a.url.contains("://") {
        return camera_device(PathBuf::from(&a.url), &a, stop);
    }
    for (given, flag) in [
        (a.size.is_some(), "--size"),
        (a.fps.is_some(), "--fps"),
        (a.buffers.is_some(), "--buffers"),
        (a.loops.is_some(), "--loops"),
    ] {
        if given {
            return Err(anyhow::anyhow!(
                "{flag} applies to a V4L2 device or a replay, not to {}",
                a.url
            ))
            .fail(Exit::Usage, WHO);
        }
    }
    let mut opts = CameraOptions::new(&a.url, a.socket, &a.sensor);
    opts.storage = match a.format {
        Format::Mjpg => Storage::Mjpg,
        Format::Jpg => Storage::Jpg,
    };
    opts.limits.max_part = a.max_frame_bytes;
    (opts.stall_timeout, opts.stop_timeout) = timeouts(a.stall_timeout, a.stop_timeout)?;
    let mut on_bad = |n: u64, e: &camera::NotStored| {
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

/// `driver camera /dev/videoN`: the V4L2 device opened in the mode asked, then [`camera_v4l2`].
fn camera_device(path: PathBuf, a: &CameraArgs, stop: Arc<AtomicBool>) -> Result<Outcome> {
    if a.loops.is_some() {
        return Err(anyhow::anyhow!(
            "--loops applies to a replay, not to a V4L2 device"
        ))
        .fail(Exit::Usage, WHO);
    }
    let size = match &a.size {
        Some(s) => Some(v4l2::modes::parse_size(s).fail(Exit::Usage, WHO)?),
        None => None,
    };
    let mut opts = v4l2::device::DeviceOptions {
        want: v4l2::modes::Want { size, fps: a.fps },
        ..Default::default()
    };
    opts.buffers = a.buffers.unwrap_or(opts.buffers);
    (opts.stall_timeout, _) = timeouts(a.stall_timeout, a.stop_timeout)?;
    let mut device = v4l2::device::Device::open(&path, &opts, stop).fail(Exit::Usage, WHO)?;
    let caps = device.caps();
    eprintln!(
        "{} ({}, {}): MJPG {}, {} mmap buffers",
        path.display(),
        caps.card,
        caps.driver,
        device.mode(),
        device.buffers()
    );
    camera_v4l2(&mut device, a)
}

/// `driver camera replay:DIR`: the files of DIR as a camera's buffers, then [`camera_v4l2`].
fn camera_replay(dir: PathBuf, a: &CameraArgs, stop: Arc<AtomicBool>) -> Result<Outcome> {
    if a.size.is_some() {
        return Err(anyhow::anyhow!(
            "--size applies to a V4L2 device: a replay's frames are the files' size"
        ))
        .fail(Exit::Usage, WHO);
    }
    let opts = v4l2::replay::ReplayOptions {
        fps: a.fps.unwrap_or(30),
        loops: a.loops.unwrap_or(1),
        buffers: a.buffers.unwrap_or(4) as usize,
    };
    let mut replay = v4l2::replay::Replay::open(&dir, opts, stop).fail(Exit::Usage, WHO)?;
    camera_v4l2(&mut replay, a)
}

/// The V4L2 loop over an open source; its report and exit code.
fn camera_v4l2(source: &mut dyn v4l2::FrameSource, a: &CameraArgs) -> Result<Outcome> {
    let name = source.name().to_string();
    let mut opts = CameraOptions::new(&name, a.socket.clone(), &a.sensor);
    opts.storage = match a.format {
        Format::Mjpg => Storage::Mjpg,
        Format::Jpg => Storage::Jpg,
    };
    (_, opts.stop_timeout) = timeouts(a.stall_timeout, a.stop_timeout)?;
    let mut on_bad = |n: u64, e: &camera::NotStored| {
        // The first ten, then every hundredth: a broken camera does not flood the journal.
        if n <= 10 || n.is_multiple_of(100) {
            eprintln!("{name}: buffer not stored ({n} so far): {e}");
        }
    };
    let r = v4l2::run(source, &opts, &mut on_bad).fail(Exit::Usage, WHO)?;
    eprintln!(
        "{}: {} frames ({} bytes) sent, {} of {} durable; {} buffers were not whole JPEGs; \
         {} frames skipped by the camera (sequence gaps)",
        source.name(),
        r.frames,
        r.bytes,
        r.durable,
        r.expected,
        r.not_jpeg,
        r.skipped
    );
    ended(r.ended)
}
