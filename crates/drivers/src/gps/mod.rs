//! The GPS driver, through gpsd: its JSON socket (`?WATCH={"enable":true,"json":true}`), each
//! TPV report (time-position-velocity) one sample of a `gps` sensor. The channels are named so
//! that `foxglove_location` and `roverlog export` show the sensor on the map without
//! configuration (`roverlog_export::location::by_channel_names`): scalar `f8` channels
//! `latitude`, `longitude` (degrees), `altitude` (metres above mean sea level), `speed` (m/s),
//! `track` (degrees from true north), `climb` (m/s), `gps_time` (the fix's time, epoch
//! seconds), and `u1` `mode` (gpsd's: 0 unknown, 1 no fix, 2 2D, 3 3D). A value the report
//! lacks is NaN. `ts` is the epoch time at receipt.

pub mod tpv;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stop_reader::{StopReader, STOPPED};
use roverlog_client::{ResilientDriver, ResilientOptions};
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};

pub use tpv::{Tpv, TpvError};

/// The longest line read from gpsd (its SKY reports run to a few KiB).
const MAX_LINE: usize = 64 << 10;
/// How often a blocked read looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);

/// What [`run`] needs.
#[derive(Debug, Clone)]
pub struct GpsOptions {
    /// gpsd's address, `HOST:PORT`.
    pub gpsd: String,
    pub socket: PathBuf,
    pub sensor: String,
    /// gpsd sending nothing this long ends the stream (it sends VERSION, DEVICES, WATCH at
    /// once, TPV every fix).
    pub stall_timeout: Duration,
    pub max_delay: Duration,
    pub sync_every: Duration,
    pub stop_timeout: Duration,
    pub client: ResilientOptions,
}

impl GpsOptions {
    pub fn new(gpsd: &str, socket: PathBuf, sensor: &str) -> Self {
        GpsOptions {
            gpsd: gpsd.to_string(),
            socket,
            sensor: sensor.to_string(),
            stall_timeout: Duration::from_secs(30),
            max_delay: Duration::from_millis(100),
            sync_every: Duration::from_secs(1),
            stop_timeout: Duration::from_secs(10),
            client: ResilientOptions::default(),
        }
    }
}

/// Why the driver stopped before the end it was asked for.
#[derive(Debug, thiserror::Error)]
pub enum GpsError {
    #[error("gpsd at {addr}: connecting: {error}")]
    Connect { addr: String, error: io::Error },
    #[error("gpsd at {addr}: {error}")]
    Io { addr: String, error: io::Error },
    #[error("gpsd at {addr}: a line longer than {MAX_LINE} bytes")]
    LineTooLong { addr: String },
    #[error("gpsd at {addr}: the connection ended")]
    Ended { addr: String },
    #[error("the daemon: {0}")]
    // Not `#[from]`: that would make it the source too, and `{:#}` would print it twice.
    Daemon(roverlog_client::Error),
    #[error("after {waited:?}, {durable} of {expected} fixes were durable")]
    NotDurable {
        waited: Duration,
        durable: u64,
        expected: u64,
    },
}

/// What was sent, and how the stream ended.
#[derive(Debug, Default)]
pub struct GpsReport {
    /// TPV reports sent.
    pub fixes: u64,
    /// Lines that were not a readable report (counted, never stored), the last one's problem.
    pub bad_lines: u64,
    pub last_bad: Option<TpvError>,
    pub durable: u64,
    pub expected: u64,
    /// None when told to stop.
    pub ended: Option<GpsError>,
}

/// The data channels, in sample order.
pub const CHANNELS: [(&str, &str); 7] = [
    ("latitude", "degrees (WGS84)"),
    ("longitude", "degrees (WGS84)"),
    ("altitude", "metres above mean sea level"),
    ("speed", "speed over ground, m/s"),
    ("track", "course over ground, degrees from true north"),
    ("climb", "climb (negative: sink), m/s"),
    ("gps_time", "the fix's GPS time, epoch seconds (UTC)"),
];

/// The sensor's metadata (see the module doc).
pub fn sensor_meta() -> SensorMeta {
    let f8 = |desc| ChannelMeta::new(ChannelFormat::Raw, DType::F8, vec![], desc);
    let mut channels = vec![("ts".to_string(), ChannelMeta::timestamps())];
    channels.extend(CHANNELS.iter().map(|(n, d)| (n.to_string(), f8(d))));
    channels.push((
        "mode".into(),
        ChannelMeta::new(
            ChannelFormat::Raw,
            DType::U1,
            vec![],
            "fix quality (gpsd's mode): 0 unknown, 1 no fix, 2 2D, 3 3D",
        ),
    ));
    SensorMeta { channels }
}

/// Runs until gpsd's connection ends or `stop` is set; `on_bad` hears each line that was not
/// a readable report.
pub fn run(
    opts: &GpsOptions,
    stop: Arc<AtomicBool>,
    on_bad: &mut dyn FnMut(u64, &TpvError),
) -> Result<GpsReport, GpsError> {
    let addr = opts.gpsd.clone();
    let connect = |error| GpsError::Connect {
        addr: addr.clone(),
        error,
    };
    let io_err = |error| GpsError::Io {
        addr: addr.clone(),
        error,
    };
    let target = opts
        .gpsd
        .to_socket_addrs()
        .map_err(connect)?
        .next()
        .ok_or_else(|| connect(io::ErrorKind::NotFound.into()))?;
    let mut sock = TcpStream::connect_timeout(&target, Duration::from_secs(5)).map_err(connect)?;
    sock.set_read_timeout(Some(POLL)).map_err(io_err)?;
    sock.write_all(b"?WATCH={\"enable\":true,\"json\":true}\n")
        .map_err(io_err)?;
    let mut lines = BufReader::new(StopReader::new(
        sock,
        stop.clone(),
        opts.stall_timeout,
        "gpsd",
    ));
    // The daemon is reached before the first fix: the sensor's channels do not depend on it.
    let mut d = ResilientDriver::connect(
        &opts.socket,
        &opts.sensor,
        sensor_meta(),
        false,
        &opts.client,
    )?;
    let mut report = GpsReport::default();
    let mut line = Vec::new();
    let mut last_sync = Instant::now();
    loop {
        line.clear();
        let n = match (&mut lines)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(n) => n,
            Err(e) if e.kind() == STOPPED => break,
            Err(e) => {
                report.ended = Some(io_err(e));
                break;
            }
        };
        if n == 0 {
            report.ended = Some(GpsError::Ended { addr: addr.clone() });
            break;
        }
        if line.len() > MAX_LINE {
            report.ended = Some(GpsError::LineTooLong { addr: addr.clone() });
            break;
        }
        let ts = crate::epoch_now();
        match tpv::parse(&line) {
            Ok(Some(fix)) => {
                let values = fix.values();
                let mut bytes: Vec<[u8; 8]> = values.iter().map(|v| v.to_le_bytes()).collect();
                let mode = [fix.mode];
                let mut samples: Vec<&[u8]> = bytes.iter_mut().map(|b| &b[..]).collect();
                samples.push(&mode);
                d.send(ts, None, &samples)?;
                report.fixes += 1;
            }
            Ok(None) => {}
            Err(e) => {
                report.bad_lines += 1;
                on_bad(report.bad_lines, &e);
                report.last_bad = Some(e);
            }
        }
        if d.oldest_pending()
            .is_some_and(|t| t.elapsed() >= opts.max_delay)
        {
            d.flush()?;
        }
        if last_sync.elapsed() >= opts.sync_every {
            d.sync()?;
            last_sync = Instant::now();
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let start = Instant::now();
    loop {
        report.durable = d.sync()?;
        report.expected = d.expected_durable();
        if report.durable >= report.expected {
            return Ok(report);
        }
        if start.elapsed() >= opts.stop_timeout {
            return Err(GpsError::NotDurable {
                waited: start.elapsed(),
                durable: report.durable,
                expected: report.expected,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl From<roverlog_client::Error> for GpsError {
    fn from(e: roverlog_client::Error) -> Self {
        GpsError::Daemon(e)
    }
}
