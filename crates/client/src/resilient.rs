//! A driver that rides out daemon restarts: [`ResilientDriver`] wraps one sensor's
//! [`Driver`] connection, reconnects with back-off when the daemon goes away, and resends what
//! the daemon did not keep (docs/protocol.md 6 and 7). The Python `roverlog.Driver` and
//! `roverlog replay` ([`play`](crate::play())) both send through it.
//!
//! **Batching.** [`ResilientDriver::push`] encodes a sample into a pending batch;
//! [`ResilientDriver::send`] also writes the batch once it holds `max_bytes`, and
//! [`ResilientDriver::flush`] writes it whatever its size. (A caller that bounds how long a
//! sample may wait, like the Python driver's flusher thread, flushes when
//! [`ResilientDriver::oldest_pending`] is old enough.)
//!
//! **What is retained.** Every encoded frame, from the moment it is pushed, in a [`Retained`]
//! buffer of at most `max_retained` bytes (the newest frame is kept even if larger). A full
//! buffer forgets its oldest frames; nothing else is forgotten before it is acknowledged.
//!
//! **When it is released.** On a durable acknowledgement: [`ResilientDriver::sync`] asks the
//! daemon, and the frames its `durable` count covers are dropped. A reply with `recording:
//! false` counts 0 durable samples and so releases nothing.
//!
//! **What is resent after a reconnect.** The hello reply says how many samples the daemon
//! holds of the sensor (`samples`). In the same trace as before, the driver's frames after
//! those are resent (the daemon kept the others: a kill -9 loses only what it had not
//! written). In a new trace (the daemon was stopped cleanly and started again), every frame
//! not acknowledged durable is resent there; the old trace may hold some of them too: better
//! twice than lost. Frames still pending are part of what is resent, so the batch restarts
//! empty. Counts that cannot be explained (the daemon holds more of ours than we sent, fewer
//! than it had when we started, or needs frames the full buffer forgot) are errors
//! ([`Error::ResumeAhead`], [`Error::ResumeBehind`], [`Error::RetainedLost`]).
//!
//! **Back-off.** A connection attempt that fails because the daemon is gone
//! ([`is_daemon_gone`]: socket missing or refusing, connection closed without a reply, the
//! sensor's old connection not yet noticed closed) is retried after 20 ms, then 40, 80, ...
//! doubling up to 1 s between attempts, as long as `reconnect_timeout` has not passed since
//! the first attempt; so giving up takes at most `reconnect_timeout` plus one second. Any
//! other error (a refusal) is returned at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use roverlog_core::error::{Error, Result};
use roverlog_core::format::SensorMeta;

use crate::driver::{encode_frame, is_daemon_gone, sample_sizes, Driver, HelloReply};
use crate::retain::Retained;

/// Bounds of a [`ResilientDriver`]; the defaults are the Python driver's.
#[derive(Debug, Clone)]
pub struct ResilientOptions {
    /// A batch is written once it holds this many bytes (1: every sample at once).
    pub max_bytes: usize,
    /// Bytes of frames kept until acknowledged durable (see the module doc).
    pub max_retained: usize,
    /// How long to keep trying to reach a daemon that is gone.
    pub reconnect_timeout: Duration,
}

impl Default for ResilientOptions {
    fn default() -> Self {
        ResilientOptions {
            max_bytes: 1 << 20,
            max_retained: 256 << 20,
            reconnect_timeout: Duration::from_secs(30),
        }
    }
}

/// The waits between connection attempts: 20 ms doubling up to 1 s.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    /// The first wait.
    pub const FIRST: Duration = Duration::from_millis(20);
    /// The longest wait.
    pub const MAX: Duration = Duration::from_secs(1);

    pub fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }

    /// The wait before the next attempt.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (wait * 2).min(Self::MAX);
        wait
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

/// One sensor's samples into a daemon, across reconnects (see the module doc).
pub struct ResilientDriver {
    socket: PathBuf,
    sensor: String,
    meta: SensorMeta,
    seq: bool,
    sizes: Vec<Option<usize>>,
    conn: Option<Driver>,
    /// The trace of the last hello reply ("" before the first, or when not recording).
    trace: String,
    /// The daemon's sample count of the sensor minus our frame number (the samples it had
    /// before our first frame; after a switch to a new trace, minus the frames resent).
    base: i64,
    /// Frames pushed.
    sent: u64,
    /// Frames encoded but not yet written, and since when the oldest waits.
    pending: Vec<u8>,
    pending_frames: u64,
    pending_since: Option<Instant>,
    retained: Retained,
    durable: u64,
    max_bytes: usize,
    reconnect_timeout: Duration,
}

impl ResilientDriver {
    /// Connects (with back-off while the daemon is gone, see the module doc).
    pub fn connect(
        socket: &Path,
        sensor: &str,
        meta: SensorMeta,
        seq: bool,
        opts: &ResilientOptions,
    ) -> Result<ResilientDriver> {
        let mut d = ResilientDriver::unconnected(socket, sensor, meta, seq, opts);
        d.reconnect()?;
        Ok(d)
    }

    /// Takes over a connection just made with [`Driver::connect`] (whose `meta` it needs for
    /// reconnects): for a caller that wants its first connection to fail fast.
    pub fn adopt(
        conn: Driver,
        hello: HelloReply,
        meta: SensorMeta,
        opts: &ResilientOptions,
    ) -> Result<ResilientDriver> {
        let mut d =
            ResilientDriver::unconnected(conn.socket(), conn.sensor(), meta, conn.seq(), opts);
        d.resume(conn, hello)?;
        Ok(d)
    }

    fn unconnected(
        socket: &Path,
        sensor: &str,
        meta: SensorMeta,
        seq: bool,
        opts: &ResilientOptions,
    ) -> ResilientDriver {
        ResilientDriver {
            socket: socket.to_path_buf(),
            sensor: sensor.to_string(),
            sizes: sample_sizes(&meta),
            meta,
            seq,
            conn: None,
            trace: String::new(),
            base: 0,
            sent: 0,
            pending: Vec::new(),
            pending_frames: 0,
            pending_since: None,
            retained: Retained::new(opts.max_retained),
            durable: 0,
            max_bytes: opts.max_bytes.max(1),
            reconnect_timeout: opts.reconnect_timeout,
        }
    }

    /// Frames pushed (sent or pending) on this driver.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The last durable count the daemon reported (its count of the sensor in its trace).
    pub fn durable(&self) -> u64 {
        self.durable
    }

    /// The trace the daemon records into, from the last hello reply.
    pub fn trace(&self) -> &str {
        &self.trace
    }

    /// The durable count that covers every frame pushed, in the daemon's current trace.
    pub fn expected_durable(&self) -> u64 {
        u64::try_from(self.base + self.sent as i64).unwrap_or(0)
    }

    /// Bytes pushed but not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    /// Whether the batch holds `max_bytes` (what [`send`](Self::send) writes it at).
    pub fn batch_full(&self) -> bool {
        self.pending.len() >= self.max_bytes
    }

    /// Since when the oldest frame not yet written waits.
    pub fn oldest_pending(&self) -> Option<Instant> {
        self.pending_since
    }

    /// Bytes kept until acknowledged durable.
    pub fn retained_bytes(&self) -> usize {
        self.retained.bytes()
    }

    /// Encodes one sample into the batch and the retain buffer, without writing; `seq`
    /// defaults to the count of frames pushed.
    pub fn push(&mut self, ts: f64, seq: Option<u64>, samples: &[&[u8]]) -> Result<()> {
        let seq = self.seq.then(|| seq.unwrap_or(self.sent));
        let at = self.pending.len();
        encode_frame(&mut self.pending, &self.sizes, ts, seq, samples).map_err(|problem| {
            Error::BadSample {
                socket: None,
                sensor: self.sensor.clone(),
                problem,
            }
        })?;
        self.retained.push(&self.pending[at..]);
        self.pending_frames += 1;
        self.pending_since.get_or_insert_with(Instant::now);
        self.sent += 1;
        Ok(())
    }

    /// [`push`](Self::push), then writes the batch once it holds `max_bytes`.
    pub fn send(&mut self, ts: f64, seq: Option<u64>, samples: &[&[u8]]) -> Result<()> {
        self.push(ts, seq, samples)?;
        if self.batch_full() {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the batch, reconnecting (and resending) if the daemon went away.
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let Some(conn) = self.conn.as_mut() else {
            return self.reconnect();
        };
        match conn.send_encoded(&self.pending, self.pending_frames) {
            Ok(()) => {
                self.clear_pending();
                Ok(())
            }
            Err(e) if is_daemon_gone(&e) => {
                self.conn = None;
                self.reconnect()
            }
            Err(e) => Err(e),
        }
    }

    /// Flushes and asks for durability; returns the sensor's durable count in the daemon's
    /// trace and releases the frames it covers. Reconnects (and resends) as needed.
    pub fn sync(&mut self) -> Result<u64> {
        loop {
            self.flush()?;
            if self.conn.is_none() {
                self.reconnect()?;
            }
            match self.conn.as_mut().expect("connected").sync() {
                Ok(n) => {
                    self.durable = n;
                    self.retained
                        .release_before(u64::try_from(n as i64 - self.base).unwrap_or(0));
                    return Ok(n);
                }
                Err(e) if is_daemon_gone(&e) => self.conn = None,
                Err(e) => return Err(e),
            }
        }
    }

    /// Closes the connection (what is pending stays pending); a later flush or sync
    /// reconnects.
    pub fn disconnect(&mut self) {
        self.conn = None;
    }

    fn clear_pending(&mut self) {
        self.pending.clear();
        self.pending_frames = 0;
        self.pending_since = None;
    }

    /// Connects, with back-off while the daemon is gone, and resumes.
    fn reconnect(&mut self) -> Result<()> {
        let t0 = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            match Driver::connect(&self.socket, &self.sensor, &self.meta, self.seq) {
                Ok((d, hello)) => return self.resume(d, hello),
                Err(e) if is_daemon_gone(&e) && t0.elapsed() < self.reconnect_timeout => {
                    std::thread::sleep(backoff.next_wait());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A fresh connection: resend what the daemon does not have.
    fn resume(&mut self, mut d: Driver, hello: HelloReply) -> Result<()> {
        let first = self.conn.is_none() && self.trace.is_empty();
        let samples = hello.samples as i64;
        if first {
            self.base = samples;
            self.durable = hello.samples;
        } else if hello.trace != self.trace {
            // A new trace holds none of ours: every frame not acknowledged durable goes there.
            self.base = samples - self.retained.first() as i64;
        }
        self.trace = hello.trace;
        let have = u64::try_from(samples - self.base).map_err(|_| Error::ResumeBehind {
            sensor: self.sensor.clone(),
            samples: hello.samples,
        })?;
        if have > self.sent {
            return Err(Error::ResumeAhead {
                sensor: self.sensor.clone(),
                have,
                sent: self.sent,
            });
        }
        if have < self.retained.first() {
            return Err(Error::RetainedLost {
                sensor: self.sensor.clone(),
                have,
                retained_from: self.retained.first(),
            });
        }
        let missing = self.retained.frames_from(have);
        if !missing.is_empty() {
            d.send_encoded(missing, self.sent - have)?;
        }
        self.clear_pending();
        self.conn = Some(d);
        Ok(())
    }
}

#[cfg(test)]
#[path = "resilient_tests.rs"]
mod tests;
