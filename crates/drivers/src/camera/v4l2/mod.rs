//! The V4L2/UVC camera (`/dev/videoN`, MJPG format) and its stand-in, a replay of JPEG files,
//! both as a [`FrameSource`]: a source of dequeued buffers shaped as V4L2 hands them out (the
//! mapped buffer whole, `bytesused`, flags, sequence, timestamp). Everything above the source
//! is shared and sees no ioctl: [`Dequeued::jpeg`] takes the first `bytesused` bytes (never
//! the buffer's length: usb_cam #389) and walks them SOI to EOI; [`clock::EpochClock`] maps
//! the timestamp to epoch time; [`run`] sends the frames as the HTTP camera's loop does.
//!
//! - [`sys`]: the kernel's structs and ioctl numbers (the only `unsafe` besides [`device`]);
//! - [`device`]: a V4L2 capture device opened, its MJPG mode chosen ([`modes`]), mmap
//!   buffers queued, streamed;
//! - [`replay`]: ffmpeg-made (or any) JPEG files replayed at a rate through a pool of buffers
//!   that keep stale bytes past `bytesused` and carry zero padding after the EOI within it,
//!   as UVC buffers do: the tests and the benchmark drive [`run`] with it.
//!
//! Bytes after the EOI within `bytesused` (UVC cameras pad) are not the frame's: the stored
//! frame is the JPEG from its SOI to its EOI exactly, as on the HTTP path.

pub mod clock;
pub mod device;
pub mod modes;
pub mod replay;
pub mod sys;

use std::time::{Duration, Instant};

use roverlog_client::ResilientDriver;

use super::jpeg::{self, JpegInfo};
use super::NotStored;
use super::{bad, finish, send, sensor_meta, tick, CameraError, CameraOptions, CameraReport};

/// One buffer handed out by a source, until the source's next [`FrameSource::next`].
#[derive(Debug)]
pub struct Dequeued<'a> {
    /// The whole mapped buffer (V4L2's `length` bytes): past `bytesused` it holds whatever
    /// an earlier frame left there.
    pub mem: &'a [u8],
    pub bytesused: u32,
    /// `V4L2_BUF_FLAG_*`.
    pub flags: u32,
    pub sequence: u32,
    /// On the clock the flags name (see [`clock`]).
    pub timestamp: Duration,
}

impl<'a> Dequeued<'a> {
    /// The JPEG this buffer holds: its first `bytesused` bytes walked SOI to EOI, the frame
    /// being the bytes up to the EOI (padding after it is dropped). A buffer the driver
    /// flagged erroneous, or whose `bytesused` is over its length, is not a frame.
    pub fn jpeg(&self) -> Result<(&'a [u8], JpegInfo), NotStored> {
        if self.flags & sys::V4L2_BUF_FLAG_ERROR != 0 {
            return Err(NotStored::Flagged {
                sequence: self.sequence,
            });
        }
        let used = usize::try_from(self.bytesused).unwrap_or(usize::MAX);
        let Some(payload) = self.mem.get(..used) else {
            return Err(NotStored::Overrun {
                sequence: self.sequence,
                bytesused: self.bytesused,
                length: self.mem.len(),
            });
        };
        let info = jpeg::whole_jpeg(payload)?;
        Ok((&payload[..info.len], info))
    }
}

/// What [`FrameSource::next`] got.
#[derive(Debug)]
pub enum Next<'a> {
    Buffer(Dequeued<'a>),
    /// The driver was told to stop (seen within one poll, 200 ms).
    Stopped,
    /// The source has no more frames (a replay's end).
    Ended,
}

/// A source of V4L2-shaped buffers: the device, or a replay.
pub trait FrameSource {
    /// The source in messages (`/dev/video0`, `replay:DIR`).
    fn name(&self) -> &str;
    /// Where the frames came from, for the channel's description ("the V4L2 camera's MJPG
    /// buffers held them").
    fn origin(&self) -> &'static str;
    /// Gives the previous buffer back, then waits for the next one.
    fn next(&mut self) -> Result<Next<'_>, SourceError>;
}

/// Why a source stopped giving buffers.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{device}: {call}: {error}")]
    Ioctl {
        device: String,
        call: &'static str,
        error: std::io::Error,
    },
    #[error("{device}: no frame for {waited:?}")]
    Stalled { device: String, waited: Duration },
}

/// Runs until the source ends, breaks, or sees the stop flag; `on_bad` hears each buffer
/// that was not a whole JPEG (with the count so far). `opts.url` is unused: the source
/// names itself. Returns the report; an error only when the daemon could not be reached or
/// refused the sensor, or the source broke before its first frame.
pub fn run(
    source: &mut dyn FrameSource,
    opts: &CameraOptions,
    on_bad: &mut dyn FnMut(u64, &NotStored),
) -> Result<CameraReport, CameraError> {
    let name = source.name().to_string();
    let mut clock = clock::EpochClock::default();
    let mut report = CameraReport::default();
    let mut last_sequence = None;
    // The first whole frame gives the channel's shape; the daemon is reached after it.
    let (first, info, ts) = loop {
        let b = match source.next()? {
            Next::Buffer(b) => b,
            Next::Stopped => return Ok(report),
            Next::Ended => {
                return Err(CameraError::NoFrame {
                    url: name,
                    not_jpeg: report.not_jpeg,
                })
            }
        };
        let ts = clock.epoch(b.flags, b.timestamp);
        report.skipped += skipped(&mut last_sequence, b.sequence);
        match b.jpeg() {
            Ok((frame, info)) => break (frame.to_vec(), info, ts),
            Err(e) => bad(&mut report, e, on_bad),
        }
    };
    let meta = sensor_meta(opts.storage, &info, source.origin());
    let mut d = ResilientDriver::connect(&opts.socket, &opts.sensor, meta, false, &opts.client)?;
    send(&mut d, &mut report, ts, &first)?;
    let mut last_sync = Instant::now();
    loop {
        let b = match source.next() {
            Ok(Next::Buffer(b)) => b,
            Ok(Next::Stopped) => break,
            Ok(Next::Ended) => {
                report.ended = Some(CameraError::Ended { url: name });
                break;
            }
            Err(e) => {
                report.ended = Some(e.into());
                break;
            }
        };
        let ts = clock.epoch(b.flags, b.timestamp);
        report.skipped += skipped(&mut last_sequence, b.sequence);
        match b.jpeg() {
            Ok((frame, _)) => send(&mut d, &mut report, ts, frame)?,
            Err(e) => bad(&mut report, e, on_bad),
        }
        tick(&mut d, opts, &mut last_sync)?;
    }
    finish(&mut d, &mut report, opts.stop_timeout)?;
    Ok(report)
}

/// The frames missing between the last buffer's sequence number and `sequence` (the driver
/// counts every frame it captured, including those it dropped for want of a free buffer); a
/// number that goes back (a restarted stream) counts none.
pub fn skipped(last: &mut Option<u32>, sequence: u32) -> u64 {
    let gap = match *last {
        Some(l) => {
            let d = sequence.wrapping_sub(l);
            if (2..1 << 31).contains(&d) {
                u64::from(d - 1)
            } else {
                0
            }
        }
        None => 0,
    };
    *last = Some(sequence);
    gap
}

#[cfg(test)]
mod tests;
