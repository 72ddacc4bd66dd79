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
//! false` counts 0 durable samples and so releases nothing. A reply naming another trace than
//! the driver knew (a rotation, or a `start` after nothing recorded, moved the live
//! connection: protocol.md 5) settles every frame sent before it: the last `durable` are in
//! the new trace, the others in the finished one (or were discarded while nothing recorded).
//!
//! **The final count at a clean shutdown.** The hello opts in to `final_ack` (protocol.md
//! 6.1; an older daemon that refuses it gets the hello without it): when the daemon stops
//! cleanly, its last line on the connection is the sensor's durable count after the drain,
//! marked `final`. The driver reads it when the connection ends (a failed write or sync)
//! and releases the frames it covers, exactly as a durable reply does; they are in the
//! stopped trace and are not resent.
//!
//! **What is resent after a reconnect.** The hello reply says how many samples the daemon
//! holds of the sensor (`samples`). In the same trace as before, the driver's frames after
//! those are resent (the daemon kept the others: a kill -9 loses only what it had not
//! written). In a new trace (the daemon was stopped cleanly and started again), every frame
//! not acknowledged durable (by a durable reply or the final count) is resent there: after a
//! final count, exactly the frames the stopped trace lacks. Without one (a daemon older than
//! `final_ack`, or a final line lost) the old trace may hold some of them too: better twice
//! than lost; with sequence numbers and `dedup` the daemon drops such repeats within one
//! trace. Frames still pending are part of what is resent, so the batch restarts empty.
//!
//! **Not recording.** The hello and durability replies say whether the daemon records
//! ([`ResilientDriver::recording`]); samples sent while it does not are discarded by the
//! daemon (protocol.md 5.1), and [`ResilientDriver::not_recording`] says so in words. Counts that cannot be explained (the daemon holds more of ours than we sent, fewer
//! than it had when we started, or needs frames the full buffer forgot) are errors
//! ([`ResumeError`]).
//!
//! **Back-off.** A connection attempt that fails because the daemon is gone
//! ([`is_daemon_gone`]: socket missing or refusing, connection closed without a reply, the
//! sensor's old connection not yet noticed closed) is retried after 20 ms, then 40, 80, ...
//! doubling up to 1 s between attempts (the last wait cut to end at the timeout), as long
//! as `reconnect_timeout` has not passed since the first attempt. The
//! first connection waits `connect_timeout` instead, and after `wait_notice` of waiting tells
//! the caller once ([`ResilientDriver::connect_notify`]). Giving up is [`Error::NoDaemon`],
//! naming the socket. Any other error (a refusal) is returned at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result, ResumeError};
use roverlog_core::format::SensorMeta;

use crate::driver::{
    encode_frame, is_daemon_gone, not_recording_message, sample_sizes, Driver, Durable, HelloFlags,
    HelloReply,
};
use crate::retain::Retained;
use crate::sidecar::SidecarFile;

/// Bounds of a [`ResilientDriver`]; the defaults are the Python driver's.
#[derive(Debug, Clone)]
pub struct ResilientOptions {
    /// A batch is written once it holds this many bytes (1: every sample at once).
    pub max_bytes: usize,
    /// Bytes of frames kept until acknowledged durable (see the module doc).
    pub max_retained: usize,
    /// How long to keep trying to reach a daemon that is gone.
    pub reconnect_timeout: Duration,
    /// How long the first connection keeps trying (`None`: `reconnect_timeout`).
    pub connect_timeout: Option<Duration>,
    /// After this long waiting for the first connection, the caller is told once (see
    /// [`ResilientDriver::connect_notify`]).
    pub wait_notice: Duration,
    /// Ask for the final durable count at a clean daemon shutdown (protocol.md 6.1).
    pub final_ack: bool,
    /// With sequence numbers: ask the daemon to drop repeats (protocol.md 4.2).
    pub dedup: bool,
    /// Sidecar files for the sensor's directory, sent with every hello (protocol.md 2.6).
    pub files: Vec<SidecarFile>,
}

impl Default for ResilientOptions {
    fn default() -> Self {
        ResilientOptions {
            max_bytes: 1 << 20,
            max_retained: 256 << 20,
            reconnect_timeout: Duration::from_secs(30),
            connect_timeout: None,
            wait_notice: Duration::from_secs(1),
            final_ack: true,
            dedup: true,
            files: Vec::new(),
        }
    }
}

impl ResilientOptions {
    /// The hello fields for a sensor with (or without) sequence numbers.
    pub fn flags(&self, seq: bool) -> HelloFlags {
        HelloFlags {
            seq,
            final_ack: self.final_ack,
            dedup: seq && self.dedup,
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
    flags: HelloFlags,
    /// The sidecar files every hello carries (none once a daemon refused them).
    files: Vec<SidecarFile>,
    /// Whether the last hello's files were taken (`"files": true` in the reply).
    files_taken: bool,
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
    /// Whether the daemon recorded at the last hello or durability reply, and why not.
    recording: bool,
    stopped_reason: Option<String>,
    max_bytes: usize,
    reconnect_timeout: Duration,
    connect_timeout: Duration,
    wait_notice: Duration,
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
        ResilientDriver::connect_notify(socket, sensor, meta, seq, opts, &mut |_| Ok(()))
    }

    /// [`connect`](Self::connect), calling `waiting` once with the last attempt's error when
    /// the daemon has not answered for `wait_notice` (a missing socket, say): the caller can
    /// warn that it is waiting. An error from `waiting` ends the wait with it.
    pub fn connect_notify(
        socket: &Path,
        sensor: &str,
        meta: SensorMeta,
        seq: bool,
        opts: &ResilientOptions,
        waiting: &mut dyn FnMut(&Error) -> Result<()>,
    ) -> Result<ResilientDriver> {
        let flags = opts.flags(seq);
        let mut d = ResilientDriver::unconnected(socket, sensor, meta, flags, opts);
        d.reconnect_within(d.connect_timeout, waiting)?;
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
            ResilientDriver::unconnected(conn.socket(), conn.sensor(), meta, conn.flags(), opts);
        d.files_taken = hello.files;
        d.resume(conn, hello)?;
        Ok(d)
    }

    fn unconnected(
        socket: &Path,
        sensor: &str,
        meta: SensorMeta,
        flags: HelloFlags,
        opts: &ResilientOptions,
    ) -> ResilientDriver {
        ResilientDriver {
            socket: socket.to_path_buf(),
            sensor: sensor.to_string(),
            sizes: sample_sizes(&meta),
            meta,
            flags,
            files: opts.files.clone(),
            files_taken: false,
            conn: None,
            trace: String::new(),
            base: 0,
            sent: 0,
            pending: Vec::new(),
            pending_frames: 0,
            pending_since: None,
            retained: Retained::new(opts.max_retained),
            durable: 0,
            recording: true,
            stopped_reason: None,
            max_bytes: opts.max_bytes.max(1),
            reconnect_timeout: opts.reconnect_timeout,
            connect_timeout: opts.connect_timeout.unwrap_or(opts.reconnect_timeout),
            wait_notice: opts.wait_notice,
        }
    }

    /// Whether the daemon recorded at its last reply (hello or durability): samples sent
    /// while it does not are discarded (protocol.md 5.1).
    pub fn recording(&self) -> bool {
        self.recording
    }

    /// While the daemon does not record: what happens to the samples, and why, in words.
    pub fn not_recording(&self) -> Option<String> {
        (!self.recording).then(|| {
            not_recording_message(&self.socket, &self.sensor, self.stopped_reason.as_deref())
        })
    }

    /// While the daemon does not record: why, when it said.
    pub fn not_recording_reason(&self) -> Option<String> {
        self.stopped_reason.clone()
    }

    /// The hello fields this driver sends (as the daemon took them on the last connection).
    pub fn flags(&self) -> HelloFlags {
        self.flags
    }

    /// Whether the daemon took the sidecar files at the last hello (false without files, or
    /// when the daemon predates them: then they are not in the trace).
    pub fn files_taken(&self) -> bool {
        self.files_taken
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
        let seq = self.flags.seq.then(|| seq.unwrap_or(self.sent));
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
                self.lost_connection();
                self.reconnect()
            }
            Err(e) => Err(e),
        }
    }

    /// Flushes and asks for durability; returns the sensor's durable count in the daemon's
    /// trace and releases the frames it covers. Reconnects (and resends) as needed.
    pub fn sync(&mut self) -> Result<u64> {
        self.sync_reply().map(|d| d.durable)
    }

    /// [`sync`](Self::sync) with the whole reply: `recording: false` means the daemon
    /// records nothing and discarded what was sent (see [`not_recording`](Self::not_recording)).
    pub fn sync_reply(&mut self) -> Result<Durable> {
        loop {
            self.flush()?;
            if self.conn.is_none() {
                self.reconnect()?;
            }
            match self.conn.as_mut().expect("connected").sync_reply() {
                Ok(d) => {
                    self.acknowledged(&d);
                    return Ok(d);
                }
                Err(e) if is_daemon_gone(&e) => self.lost_connection(),
                Err(e) => return Err(e),
            }
        }
    }

    /// A durable count of the connection's trace: releases the frames it covers. A reply
    /// while nothing records releases nothing.
    fn acknowledged(&mut self, d: &Durable) {
        self.recording = d.recording;
        self.stopped_reason = d.stopped_reason.clone();
        if !d.recording {
            return;
        }
        match &d.trace {
            // The connection moved to another trace (a rotation, or a start after nothing
            // recorded) since the driver last heard. A durability reply answers after every
            // frame sent before it was written: the last `durable` of them are the new trace's
            // and the earlier ones are in the finished trace (or were discarded while nothing
            // recorded). All are settled.
            Some(t) if *t != self.trace && !d.last => {
                self.trace = t.clone();
                self.base = d.durable as i64 - self.sent as i64;
            }
            // A final count in a trace the driver did not know of: which of its frames went
            // where is unknown, so nothing is released (they are resent: twice, not lost).
            Some(t) if *t != self.trace => return,
            _ => {}
        }
        self.durable = d.durable;
        self.retained
            .release_before(u64::try_from(d.durable as i64 - self.base).unwrap_or(0));
    }

    /// The connection ended (the daemon went away): its final durable count, if the daemon
    /// sent one, releases what the stopped trace holds.
    fn lost_connection(&mut self) {
        if let Some(last) = self.conn.take().and_then(|mut c| c.take_last()) {
            self.acknowledged(&last);
        }
    }

    /// Closes the connection (what is pending stays pending); a later flush or sync
    /// reconnects.
    pub fn disconnect(&mut self) {
        self.lost_connection();
    }

    fn clear_pending(&mut self) {
        self.pending.clear();
        self.pending_frames = 0;
        self.pending_since = None;
    }

    /// Connects, with back-off while the daemon is gone, and resumes.
    fn reconnect(&mut self) -> Result<()> {
        self.reconnect_within(self.reconnect_timeout, &mut |_| Ok(()))
    }

    /// [`reconnect`](Self::reconnect) within `timeout`, telling `waiting` once after
    /// `wait_notice`.
    fn reconnect_within(
        &mut self,
        timeout: Duration,
        waiting: &mut dyn FnMut(&Error) -> Result<()>,
    ) -> Result<()> {
        let t0 = Instant::now();
        let mut backoff = Backoff::new();
        let mut told = false;
        loop {
            let files = &self.files;
            match Driver::connect_full(&self.socket, &self.sensor, &self.meta, self.flags, files) {
                Ok((d, hello)) => {
                    // An older daemon refused the opt-ins: the next hellos go without them.
                    self.flags = d.flags();
                    if !d.files_sent() {
                        self.files.clear();
                    }
                    self.files_taken = hello.files;
                    return self.resume(d, hello);
                }
                Err(e) if is_daemon_gone(&e) && t0.elapsed() < timeout => {
                    if !told && t0.elapsed() >= self.wait_notice {
                        told = true;
                        waiting(&e)?;
                    }
                    std::thread::sleep(
                        backoff
                            .next_wait()
                            .min(timeout.saturating_sub(t0.elapsed())),
                    );
                }
                Err(e) if is_daemon_gone(&e) => {
                    let missing = matches!(&e, Error::Io { error, .. }
                        if error.kind() == std::io::ErrorKind::NotFound);
                    return Err(Error::NoDaemon {
                        socket: self.socket.clone(),
                        waited: t0.elapsed(),
                        last: Box::new(e),
                        missing,
                    });
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
        self.recording = hello.recording;
        self.stopped_reason = hello.stopped_reason;
        let have = u64::try_from(samples - self.base).map_err(|_| ResumeError::Behind {
            sensor: self.sensor.clone(),
            samples: hello.samples,
        })?;
        if have > self.sent {
            return Err(ResumeError::Ahead {
                sensor: self.sensor.clone(),
                have,
                sent: self.sent,
            }
            .into());
        }
        if have < self.retained.first() {
            return Err(ResumeError::RetainedLost {
                sensor: self.sensor.clone(),
                have,
                retained_from: self.retained.first(),
            }
            .into());
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
