//! A stand-in for the camera: the files of a directory (in name order, each one buffer's
//! payload: JPEGs ffmpeg wrote with `-f image2`, or anything else to test the checks) handed
//! out at a fixed rate as V4L2 hands out buffers. Like the kernel's, the buffers are a small
//! pool reused in turn, each as long as the largest payload plus padding, so past
//! `bytesused` a buffer holds the bytes an earlier frame left there; and like a UVC camera's,
//! each payload is followed within `bytesused` by zero padding (0 to [`MAX_PADDING`] bytes,
//! varying frame to frame). Timestamps are `CLOCK_MONOTONIC` at hand-out, flagged
//! `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC`, so the epoch mapping is the device's.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{clock, sys, Dequeued, FrameSource, Next, SourceError};

/// The most zero bytes put after a payload within `bytesused`.
pub const MAX_PADDING: usize = 4096;
/// How often a wait for the next frame looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);

/// Why a replay could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("replay:{}: listing the directory: {error}", dir.display())]
    List { dir: PathBuf, error: std::io::Error },
    #[error("replay:{}: reading {}: {error}", dir.display(), file.display())]
    Read {
        dir: PathBuf,
        file: PathBuf,
        error: std::io::Error,
    },
    #[error("replay:{}: no files to replay", dir.display())]
    Empty { dir: PathBuf },
    #[error("replay:{}: --fps 0: want at least 1 frame per second", dir.display())]
    ZeroRate { dir: PathBuf },
}

/// How a replay runs.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    pub fps: u32,
    /// Times through the files; 0: forever.
    pub loops: u64,
    /// Buffers in the pool (V4L2's `REQBUFS` count).
    pub buffers: usize,
}

/// The replay source (see the module doc).
pub struct Replay {
    name: String,
    payloads: Vec<Vec<u8>>,
    pool: Vec<Vec<u8>>,
    fps: u32,
    /// Buffers to hand out; None: forever.
    total: Option<u64>,
    handed: u64,
    start: Option<Instant>,
    stop: Arc<AtomicBool>,
}

impl Replay {
    /// Reads every file of `dir` (sorted by name).
    pub fn open(
        dir: &Path,
        opts: ReplayOptions,
        stop: Arc<AtomicBool>,
    ) -> Result<Replay, ReplayError> {
        if opts.fps == 0 {
            return Err(ReplayError::ZeroRate { dir: dir.into() });
        }
        let list = |error| ReplayError::List {
            dir: dir.into(),
            error,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(list)? {
            let entry = entry.map_err(list)?;
            if entry.file_type().map_err(list)?.is_file() {
                files.push(entry.path());
            }
        }
        files.sort();
        let payloads = files
            .iter()
            .map(|f| {
                std::fs::read(f).map_err(|error| ReplayError::Read {
                    dir: dir.into(),
                    file: f.clone(),
                    error,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if payloads.is_empty() {
            return Err(ReplayError::Empty { dir: dir.into() });
        }
        let largest = payloads.iter().map(Vec::len).max().unwrap_or(0);
        let length = (largest + MAX_PADDING).next_multiple_of(4096);
        Ok(Replay {
            name: format!("replay:{}", dir.display()),
            total: (opts.loops > 0).then(|| opts.loops * payloads.len() as u64),
            payloads,
            pool: vec![vec![0u8; length]; opts.buffers.max(1)],
            fps: opts.fps,
            handed: 0,
            start: None,
            stop,
        })
    }

    /// The buffers' length (what V4L2's `QUERYBUF` would say).
    pub fn buffer_len(&self) -> usize {
        self.pool[0].len()
    }
}

/// Frame `n`'s padding: 0 to MAX_PADDING bytes, varying (a multiplicative hash of `n`).
pub fn padding(n: u64) -> usize {
    (n.wrapping_mul(2_654_435_761) % (MAX_PADDING as u64 + 1)) as usize
}

impl FrameSource for Replay {
    fn name(&self) -> &str {
        &self.name
    }

    fn origin(&self) -> &'static str {
        "the replayed files held them"
    }

    fn next(&mut self) -> Result<Next<'_>, SourceError> {
        let n = self.handed;
        if self.total.is_some_and(|t| n >= t) {
            return Ok(Next::Ended);
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        let due =
            start + Duration::from_nanos(n.saturating_mul(1_000_000_000) / u64::from(self.fps));
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(Next::Stopped);
            }
            let now = Instant::now();
            if now >= due {
                break;
            }
            std::thread::sleep((due - now).min(POLL));
        }
        let payload = &self.payloads[(n % self.payloads.len() as u64) as usize];
        let index = (n % self.pool.len() as u64) as usize;
        let buf = &mut self.pool[index];
        let pad = padding(n);
        buf[..payload.len()].copy_from_slice(payload);
        buf[payload.len()..payload.len() + pad].fill(0);
        self.handed += 1;
        Ok(Next::Buffer(Dequeued {
            mem: buf,
            bytesused: (payload.len() + pad) as u32,
            flags: sys::V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC,
            sequence: n as u32,
            timestamp: clock::monotonic_now(),
        }))
    }
}
