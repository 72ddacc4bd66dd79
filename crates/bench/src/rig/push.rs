//! One rig stream pushed into the daemon as fast as it takes it: the driver side, run in its
//! own process (`roverlog bench --only rig` starts one per stream), over the ingest protocol
//! with sequence numbers and blocking back-pressure. Timestamps advance at the rig's rate,
//! whatever the wall clock does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::frames::sample_path;
use super::{Dims, Stream};
use crate::error::{Error, Result};
use roverlog_client::Driver;

/// How long to wait for any one reply (the final fsync of a large backlog can be slow).
const REPLY_TIMEOUT: Duration = Duration::from_secs(300);

/// Pool sample `k`'s bytes per channel, as [`super::frames::write_pool`] wrote them.
pub fn load_pool(dir: &Path, stream: Stream, dims: &Dims) -> Result<Vec<Vec<Vec<u8>>>> {
    let meta = stream.meta(dims);
    (0..stream.pool())
        .map(|k| {
            meta.channels
                .iter()
                .map(|(name, _)| {
                    let p = sample_path(dir, stream, k, name);
                    std::fs::read(&p).map_err(|e| Error::io(&p, e))
                })
                .collect()
        })
        .collect()
}

/// What one stream did.
#[derive(Debug, Clone, PartialEq)]
pub struct PushReport {
    pub sensor: String,
    /// The sensor's samples before this connection (0 in a fresh trace).
    pub resumed_from: u64,
    pub samples: u64,
    /// Sample bytes sent (framing excluded).
    pub bytes: u64,
    /// `durable` from the final reply.
    pub durable: u64,
    /// From the start of sending until the final durable reply.
    pub elapsed: Duration,
    /// This process's CPU time (user + system) over `elapsed`.
    pub cpu: Duration,
}

/// A connected stream, ready to send.
pub struct Session {
    driver: Driver,
    stream: Stream,
    resumed_from: u64,
    pool: Vec<Vec<Vec<u8>>>,
}

impl Session {
    /// Loads the stream's pool from `frames`, connects and says hello as `stream.name()`, and,
    /// as the collector does at the start of a capture, writes the stream's sidecar files
    /// (`lidar.json`) into the sensor's directory under `trace_dir` (when given).
    pub fn connect(
        socket: &Path,
        stream: Stream,
        dims: &Dims,
        frames: &Path,
        trace_dir: Option<&Path>,
    ) -> Result<Session> {
        let pool = load_pool(frames, stream, dims)?;
        let (mut driver, hello) = Driver::connect(socket, stream.name(), &stream.meta(dims), true)?;
        driver.set_reply_timeout(REPLY_TIMEOUT)?;
        if let Some(trace) = trace_dir {
            let dir: PathBuf = trace.join(stream.name());
            for name in stream.sidecars() {
                let (from, to) = (frames.join(stream.name()).join(name), dir.join(name));
                std::fs::copy(&from, &to).map_err(|e| Error::io(&to, e))?;
            }
        }
        Ok(Session {
            driver,
            stream,
            resumed_from: hello.samples,
            pool,
        })
    }

    /// Sends `samples` samples stamped `t0 + i / hz` as fast as the daemon takes them, then
    /// asks for durability.
    pub fn run(mut self, samples: u64, t0: f64) -> Result<PushReport> {
        let hz = self.stream.hz();
        let (start, cpu0) = (Instant::now(), cpu_time());
        let mut bytes = 0u64;
        for i in 0..samples {
            let seq = self.resumed_from + i;
            let sample = &self.pool[(seq % self.pool.len() as u64) as usize];
            let parts: Vec<&[u8]> = sample.iter().map(Vec::as_slice).collect();
            self.driver.send(t0 + seq as f64 / hz, Some(seq), &parts)?;
            bytes += parts.iter().map(|p| p.len() as u64).sum::<u64>();
        }
        // Fewer durable than sent is the daemon's drops (queue_policy "drop"): reported, for
        // the bench to count and fail on, not an error here.
        let durable = self.driver.sync()?;
        let (elapsed, cpu) = (start.elapsed(), cpu_time().saturating_sub(cpu0));
        Ok(PushReport {
            sensor: self.stream.name().to_string(),
            resumed_from: self.resumed_from,
            samples,
            bytes,
            durable,
            elapsed,
            cpu,
        })
    }
}

/// This process's user + system CPU time so far.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_counts_work() {
        let a = cpu_time();
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0 && cpu_time() > a);
    }

    #[test]
    fn the_pool_is_read_back_per_channel() {
        let dir = tempfile::tempdir().unwrap();
        super::super::frames::write_pool(dir.path(), &Dims::TINY).unwrap();
        let pool = load_pool(dir.path(), Stream::Radar, &Dims::TINY).unwrap();
        assert_eq!(pool.len(), Stream::Radar.pool());
        assert_eq!(pool[0][0].len(), 4 * 3 * 4 * 16 * 2);
        assert_eq!(pool[0][1], [1]);
    }
}
