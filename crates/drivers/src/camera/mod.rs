//! The camera driver: JPEG frames into one `mjpg` (or `jpg`) channel, passed through
//! unchanged: never decoded, only walked from SOI to EOI ([`jpeg`]) to check each is whole. A
//! part or buffer that is not a whole JPEG is counted and reported, never stored.
//!
//! Two sources. An IP camera's MJPEG stream over HTTP (`multipart/x-mixed-replace`): [`http`]
//! opens it, [`multipart`] splits it, [`run`] sends the frames (timestamps: the epoch time at
//! receipt). A V4L2/UVC camera (`/dev/videoN`): [`v4l2`], whose own `run` sends the
//! dequeued buffers (timestamps: the buffers' own, mapped to the epoch). Both go through a
//! [`ResilientDriver`] and, when told to stop, flush and wait (bounded) for the daemon to
//! report every frame durable.

pub mod http;
pub mod jpeg;
pub mod multipart;
#[cfg(test)]
mod tests;
pub mod v4l2;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roverlog_client::{ResilientDriver, ResilientOptions};
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType, SensorMeta};

use jpeg::NotJpeg;
use multipart::{Limits, MultipartError};

/// The channel's storage: one MJPEG AVI (`mjpg`, upstream's camera) or a file per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Mjpg,
    Jpg,
}

impl Storage {
    /// The channel's name: upstream's `video.avi` for `mjpg`, `img` for `jpg`.
    pub fn channel(self) -> &'static str {
        match self {
            Storage::Mjpg => "video.avi",
            Storage::Jpg => "img",
        }
    }
}

/// What [`run`] needs.
#[derive(Debug, Clone)]
pub struct CameraOptions {
    pub url: String,
    pub socket: PathBuf,
    pub sensor: String,
    pub storage: Storage,
    pub limits: Limits,
    /// Connecting to the camera.
    pub connect_timeout: Duration,
    /// The camera sending nothing this long ends the stream.
    pub stall_timeout: Duration,
    /// Written frames wait at most this long in the batch.
    pub max_delay: Duration,
    /// How often durability is asked (releasing retained frames).
    pub sync_every: Duration,
    /// At the end, how long to wait for every frame to be durable.
    pub stop_timeout: Duration,
    pub client: ResilientOptions,
}

impl CameraOptions {
    pub fn new(url: &str, socket: PathBuf, sensor: &str) -> Self {
        CameraOptions {
            url: url.to_string(),
            socket,
            sensor: sensor.to_string(),
            storage: Storage::Mjpg,
            limits: Limits::default(),
            connect_timeout: Duration::from_secs(5),
            stall_timeout: Duration::from_secs(5),
            max_delay: Duration::from_millis(50),
            sync_every: Duration::from_secs(1),
            stop_timeout: Duration::from_secs(10),
            client: ResilientOptions::default(),
        }
    }
}

/// How the stream ended, and what went where.
#[derive(Debug, Default)]
pub struct CameraReport {
    /// Whole JPEGs sent.
    pub frames: u64,
    pub bytes: u64,
    /// Parts that were not a whole JPEG (not stored), and the last one's problem.
    pub not_jpeg: u64,
    pub last_not_jpeg: Option<NotStored>,
    /// Frames the source dropped before the driver saw them (gaps in a V4L2 camera's buffer
    /// sequence numbers; 0 for HTTP, which has none).
    pub skipped: u64,
    /// Frames the daemon reported durable at the end, of `expected` (equal: nothing lost).
    pub durable: u64,
    pub expected: u64,
    /// Why the stream ended: None when told to stop, else the camera's error.
    pub ended: Option<CameraError>,
}

/// Why the driver stopped without sending everything durable.
#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    #[error(transparent)]
    Http(#[from] http::HttpError),
    #[error("{url}: {error}")]
    Stream { url: String, error: MultipartError },
    #[error("{url}: Content-Type {content_type:?} names no boundary, and {error}")]
    NotMultipart {
        url: String,
        content_type: String,
        error: MultipartError,
    },
    #[error("{url}: the stream ended")]
    Ended { url: String },
    #[error("{url}: the stream ended before its first whole JPEG ({not_jpeg} parts were not)")]
    NoFrame { url: String, not_jpeg: u64 },
    #[error("the daemon: {0}")]
    // Not `#[from]`: that would make it the source too, and `{:#}` would print it twice.
    Daemon(roverlog_client::Error),
    #[error(transparent)]
    Source(#[from] v4l2::SourceError),
    #[error("after {waited:?}, {durable} of {expected} frames were durable")]
    NotDurable {
        waited: Duration,
        durable: u64,
        expected: u64,
    },
}

/// Why a part or buffer was not stored as a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotStored {
    #[error(transparent)]
    NotJpeg(#[from] NotJpeg),
    #[error("buffer {sequence}: the device flagged it erroneous (V4L2_BUF_FLAG_ERROR)")]
    Flagged { sequence: u32 },
    #[error("buffer {sequence}: bytesused {bytesused} is over the buffer's {length} bytes")]
    Overrun {
        sequence: u32,
        bytesused: u32,
        length: usize,
    },
}

/// The sensor's metadata for frames of the first one's shape; `source` says where the
/// frames came from (the channel's description).
pub fn sensor_meta(storage: Storage, first: &jpeg::JpegInfo, source: &str) -> SensorMeta {
    let format = match storage {
        Storage::Mjpg => ChannelFormat::Mjpg,
        Storage::Jpg => ChannelFormat::Blob("jpg".into()),
    };
    let shape = vec![
        usize::from(first.height),
        usize::from(first.width),
        usize::from(first.components),
    ];
    SensorMeta {
        channels: vec![
            ("ts".into(), ChannelMeta::timestamps()),
            (
                storage.channel().into(),
                ChannelMeta::new(
                    format,
                    DType::U1,
                    shape,
                    &format!("JPEG frames as {source}, not re-encoded"),
                ),
            ),
        ],
    }
}

/// Runs until the stream ends or `stop` is set; `on_bad` hears each part that was not a whole
/// JPEG (with the count so far). Returns the report; an error only when the daemon could not
/// be reached or refused the sensor.
pub fn run(
    opts: &CameraOptions,
    stop: Arc<AtomicBool>,
    on_bad: &mut dyn FnMut(u64, &NotStored),
) -> Result<CameraReport, CameraError> {
    let stream = http::open(
        &opts.url,
        opts.connect_timeout,
        opts.stall_timeout,
        stop.clone(),
    )?;
    let stream_error = |error| CameraError::Stream {
        url: opts.url.clone(),
        error,
    };
    let mut parts = match &stream.boundary {
        Some(b) => multipart::Multipart::new(stream.body, b, opts.limits),
        None => match multipart::Multipart::sniff(stream.body, opts.limits) {
            Ok(p) => p,
            Err(e) if stopped(&e) => return Ok(CameraReport::default()),
            Err(e) => {
                return Err(CameraError::NotMultipart {
                    url: opts.url.clone(),
                    content_type: stream.content_type,
                    error: e,
                })
            }
        },
    };
    let mut report = CameraReport::default();
    // The first whole frame gives the channel's shape; the daemon is reached after it.
    let (first, ts) = loop {
        let part = match parts.next_part() {
            Ok(Some(p)) => p,
            Ok(None) => {
                return Err(CameraError::NoFrame {
                    url: opts.url.clone(),
                    not_jpeg: report.not_jpeg,
                })
            }
            Err(e) if stopped(&e) => return Ok(report),
            Err(e) => return Err(stream_error(e)),
        };
        let ts = crate::epoch_now();
        match jpeg::whole_jpeg(&part) {
            Ok(info) => break ((part, info), ts),
            Err(e) => bad(&mut report, e.into(), on_bad),
        }
    };
    let meta = sensor_meta(
        opts.storage,
        &first.1,
        "the IP camera sent them (MJPEG over HTTP)",
    );
    let mut d = ResilientDriver::connect(&opts.socket, &opts.sensor, meta, false, &opts.client)?;
    send(&mut d, &mut report, ts, &first.0[..first.1.len])?;
    let mut last_sync = Instant::now();
    loop {
        let part = match parts.next_part() {
            Ok(Some(p)) => p,
            Ok(None) => {
                report.ended = Some(CameraError::Ended {
                    url: opts.url.clone(),
                });
                break;
            }
            Err(e) if stopped(&e) => break,
            Err(e) => {
                report.ended = Some(stream_error(e));
                break;
            }
        };
        let ts = crate::epoch_now();
        match jpeg::whole_jpeg(&part) {
            Ok(info) => send(&mut d, &mut report, ts, &part[..info.len])?,
            Err(e) => bad(&mut report, e.into(), on_bad),
        }
        tick(&mut d, opts, &mut last_sync)?;
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    finish(&mut d, &mut report, opts.stop_timeout)?;
    Ok(report)
}

fn stopped(e: &MultipartError) -> bool {
    matches!(e, MultipartError::Io(io) if io.kind() == crate::stop_reader::STOPPED)
}

fn bad(report: &mut CameraReport, e: NotStored, on_bad: &mut dyn FnMut(u64, &NotStored)) {
    report.not_jpeg += 1;
    on_bad(report.not_jpeg, &e);
    report.last_not_jpeg = Some(e);
}

/// After each frame: flushes the batch once its oldest frame waited `max_delay`, asks for
/// durability every `sync_every`.
fn tick(
    d: &mut ResilientDriver,
    opts: &CameraOptions,
    last_sync: &mut Instant,
) -> Result<(), CameraError> {
    if d.oldest_pending()
        .is_some_and(|t| t.elapsed() >= opts.max_delay)
    {
        d.flush()?;
    }
    if last_sync.elapsed() >= opts.sync_every {
        d.sync()?;
        *last_sync = Instant::now();
    }
    Ok(())
}

fn send(
    d: &mut ResilientDriver,
    report: &mut CameraReport,
    ts: f64,
    frame: &[u8],
) -> Result<(), CameraError> {
    d.send(ts, None, &[frame])?;
    report.frames += 1;
    report.bytes += frame.len() as u64;
    Ok(())
}

/// Flushes, then asks until every frame is durable or `timeout` passed.
fn finish(
    d: &mut ResilientDriver,
    report: &mut CameraReport,
    timeout: Duration,
) -> Result<(), CameraError> {
    let start = Instant::now();
    loop {
        let durable = d.sync()?;
        report.durable = durable;
        report.expected = d.expected_durable();
        if durable >= report.expected {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(CameraError::NotDurable {
                waited: start.elapsed(),
                durable,
                expected: report.expected,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl From<roverlog_client::Error> for CameraError {
    fn from(e: roverlog_client::Error) -> Self {
        CameraError::Daemon(e)
    }
}
