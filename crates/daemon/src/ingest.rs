//! The ingest socket: the accept loop and one tokio task per connection (= one sensor).
//!
//! A connection task reads into a reusable `BytesMut`, checks frames in place
//! ([`FrameLayout::check`]), and hands runs of accepted frames to the sensor's writer as one
//! `Bytes` (no copy, no per-frame allocation). Before a frame is queued it takes its size in
//! permits from the sensor's byte budget: the `block` policy waits for them (backpressure),
//! the `drop` policy drops the frame and counts it. Sequence gaps and clock steps are noticed
//! here and written to the event log; so are repeats of frames already written (`repeat`, the
//! hello's opt-in `dedup`). At a clean shutdown a connection that opted in with `final_ack`
//! gets its final durable count before it closes (`final_ack`). The hello line and the
//! sidecar files that may follow it are read in `hello`.

use std::os::fd::AsFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, TryAcquireError};

use super::bufpool::{BufPool, PoolBuf};
use super::config::QueuePolicy;
use super::events::{now_epoch, Event};
use super::failure::WriterError;
use super::poison::LockExt;
use super::protocol::{error_line, line, Check, FrameLayout, Hello};
use super::recording::{AttachError, Recorder, Slot};
use super::shutdown::Shutdown;
use super::sidecar::Sidecars;
use super::writer::WriterMsg;

mod error;
mod final_ack;
mod hello;
mod repeat;
pub use error::ConnError;

/// Smallest read: reading less per syscall would cost throughput for small frames.
const READ_CHUNK: usize = 64 << 10;
/// Frames at least this large are received into a pooled buffer of their own.
pub const POOLED_FRAME: usize = 256 << 10;

/// Accepts connections until shutdown; each connection holds a permit of `conns`.
pub async fn accept_loop(
    listener: UnixListener,
    rec: Arc<Recorder>,
    mut shutdown: Shutdown,
    conns: Arc<Semaphore>,
    done: tokio::sync::mpsc::Sender<()>,
) {
    let pool = Arc::new(BufPool::default());
    let mut idle_tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = idle_tick.tick() => {
                if pool.release_idle() {
                    // Large frames' buffers freed into the heap (below the mmap threshold)
                    // go back to the kernel once the load is over.
                    tokio::task::spawn_blocking(crate::malloc_policy::trim);
                }
                continue;
            }
            _ = shutdown.recv() => return,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("ingest accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            let mut s = stream;
            let refusal = ConnError::TooManyConnections.to_string();
            let _ = s.write_all(&error_line(&refusal)).await;
            continue;
        };
        let (rec, shutdown, done, pool) =
            (rec.clone(), shutdown.clone(), done.clone(), pool.clone());
        tokio::spawn(async move {
            let mut conn = Connection {
                stream,
                buf: BytesMut::with_capacity(READ_CHUNK),
                rec,
                shutdown,
                drain_left: None,
                pool: pool.clone(),
            };
            if let Err(e) = conn.run().await {
                let msg = e.to_string();
                tracing::info!("ingest connection closed: {msg}");
                let line = failed_disk_line(&conn.rec, &e).unwrap_or_else(|| error_line(&msg));
                let _ = conn.stream.write_all(&line).await;
                let _ = conn.stream.shutdown().await;
            }
            drop(permit);
            drop(done);
        });
    }
}

/// A durability reply: `{"ok": true, "durable": n, "recording": ..., "trace": ...}`, `n`
/// counting in `trace` as the sensor's writer reports it. `recording: false`: no trace is
/// open (stopped, or the disk guard stopped it) and frames are being discarded; then
/// `stopped_reason` says why, when the daemon knows (docs/protocol.md 5.1).
fn durable_reply(rec: &Recorder, (n, trace): (u64, Option<String>)) -> Value {
    let recording = trace.is_some();
    let mut reply = json!({"ok": true, "durable": n, "recording": recording, "trace": trace});
    if !recording {
        if let Some(why) = rec.stopped_reason() {
            reply["stopped_reason"] = json!(why);
        }
    }
    reply
}

/// Whether the peer may connect (`allow_uids`/`allow_gids`; both empty allows everyone).
fn peer_allowed(stream: &UnixStream, uids: &[u32], gids: &[u32]) -> Result<(), ConnError> {
    if uids.is_empty() && gids.is_empty() {
        return Ok(());
    }
    let cred = stream.peer_cred().map_err(ConnError::PeerCredentials)?;
    if uids.contains(&cred.uid()) || gids.contains(&cred.gid()) {
        Ok(())
    } else {
        Err(ConnError::PeerNotAllowed {
            uid: cred.uid(),
            gid: cred.gid(),
        })
    }
}

/// The error line of a sensor whose files failed on the disk (protocol.md 6.2): also the
/// count its last good fsync made durable and the trace it counts in, where the daemon cut
/// the sensor back to (`disk_fault`) and resumes it on a reconnect.
fn failed_disk_line(rec: &Recorder, e: &ConnError) -> Option<Vec<u8>> {
    let sensor = e.failed_sensor()?;
    let fault = rec
        .faults()
        .all()
        .into_iter()
        .find(|f| f.sensor == sensor)?;
    let trace = fault.trace.file_name()?.to_string_lossy().into_owned();
    Some(line(json!({
        "ok": false,
        "error": e.to_string(),
        "durable": fault.durable,
        "trace": trace,
    })))
}

/// Bytes queued in the socket's receive buffer, not yet read (`FIONREAD`).
fn queued_bytes(stream: &UnixStream) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which points at `n`.
    let r = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0).then_some(n as usize)
}

struct Connection {
    stream: UnixStream,
    buf: BytesMut,
    rec: Arc<Recorder>,
    shutdown: Shutdown,
    /// Bytes the driver had sent when the shutdown began that are still to be read (`None`:
    /// not shutting down).
    drain_left: Option<usize>,
    pool: Arc<BufPool>,
}

/// A connection's frame bookkeeping.
#[derive(Default)]
struct Tally {
    /// This connection's frames carry a sequence number.
    seq: bool,
    frame_no: u64,
    last_seq: Option<u64>,
    last_ts: Option<f64>,
    drops: Option<DropRun>,
    repeats: Option<repeat::RepeatRun>,
    /// Accepted frames at the front of `buf` not yet sent: bytes, frames, permits.
    pend_bytes: usize,
    pend_frames: u32,
    pend_cost: usize,
    /// The receive time (epoch seconds) of each pending frame.
    pend_recv: Vec<f64>,
}

/// A run of dropped frames, written as one event when it ends.
struct DropRun {
    count: u64,
    first_frame: u64,
    first_ts: f64,
    last_ts: f64,
}

impl Connection {
    /// Reads more bytes; `Ok(false)` at end of stream (or when draining found no more).
    async fn fill(&mut self, want: usize) -> Result<bool, ConnError> {
        let need = want.saturating_sub(self.buf.len()).max(READ_CHUNK);
        self.buf.reserve(need);
        if self.drain_left.is_none() {
            // Shutdown first: the first read after it starts the drain, not a coin toss.
            tokio::select! {
                biased;
                _ = self.shutdown.recv() => self.start_drain(),
                r = self.stream.read_buf(&mut self.buf) => {
                    return r.map(|n| n > 0).map_err(ConnError::Read);
                }
            }
        }
        if self.drain_left == Some(0) {
            return Ok(false);
        }
        match tokio::time::timeout(self.drain_quiet(), self.stream.read_buf(&mut self.buf)).await {
            Ok(r) => r.map(|n| self.drained(n) > 0).map_err(ConnError::Read),
            Err(_) => Ok(false),
        }
    }

    /// During shutdown, a connection drains what the driver had sent when the shutdown began
    /// (the bytes then queued in the socket; a driver that keeps sending, as any live sensor
    /// does, would otherwise hold the daemon until its shutdown deadline), and stops early
    /// after `drain_quiet_ms` without new bytes.
    fn drain_quiet(&self) -> Duration {
        self.rec.cfg.recording.drain_quiet
    }

    /// The shutdown began (this connection notices it at its next read): from now on read
    /// only what the socket already holds.
    fn start_drain(&mut self) {
        // Unknown (the ioctl failed): drain until the driver goes quiet, as before.
        self.drain_left = Some(queued_bytes(&self.stream).unwrap_or(usize::MAX));
    }

    /// Counts `n` bytes read while draining; returns `n`.
    fn drained(&mut self, n: usize) -> usize {
        if let Some(left) = &mut self.drain_left {
            *left = left.saturating_sub(n);
        }
        n
    }

    /// Reads into `dst`, as [`Connection::fill`] does into `buf`; 0 at end of stream (or
    /// when draining found no more).
    async fn read_into(&mut self, dst: &mut [u8]) -> Result<usize, ConnError> {
        if self.drain_left.is_none() {
            tokio::select! {
                biased;
                _ = self.shutdown.recv() => self.start_drain(),
                r = self.stream.read(dst) => return r.map_err(ConnError::Read),
            }
        }
        if self.drain_left == Some(0) {
            return Ok(0);
        }
        match tokio::time::timeout(self.drain_quiet(), self.stream.read(dst)).await {
            Ok(r) => r.map(|n| self.drained(n)).map_err(ConnError::Read),
            Err(_) => Ok(0),
        }
    }

    async fn run(&mut self) -> Result<(), ConnError> {
        let (hello, layout, files) = self.hello().await?;
        let slot = self.attach(&hello, &files).await?;
        let r = match self.put_files(&slot, files).await {
            Ok(()) => self.serve(&hello, &layout, &slot).await,
            Err(e) => Err(e),
        };
        self.rec.detach(&slot);
        r
    }

    /// Attaches to the hello's sensor. A sensor whose connection is still attached refuses
    /// the hello (protocol.md 7) unless that connection's driver has already closed it (a
    /// driver that reconnects at once, before the old connection's task has read its end):
    /// then the hello waits, within `hello_timeout_ms`, for its release.
    async fn attach(&mut self, hello: &Hello, files: &Sidecars) -> Result<Arc<Slot>, ConnError> {
        let t0 = tokio::time::Instant::now();
        let bound = self.rec.cfg.ingest.hello_timeout;
        loop {
            match self.rec.attach(hello, files.clone()) {
                Err(AttachError::Busy { .. })
                    if t0.elapsed() < bound && self.rec.holder_closed(&hello.sensor) =>
                {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Ok(slot) => {
                    self.rec.set_connection(&slot, self.stream.as_fd());
                    return Ok(slot);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn serve(
        &mut self,
        hello: &Hello,
        layout: &FrameLayout,
        slot: &Arc<Slot>,
    ) -> Result<(), ConnError> {
        // Trace and count as the writer sees them: during a rotation the recorder's current
        // trace is already the new one while this writer still counts in the old one.
        let (samples, trace) = match slot.ask(WriterMsg::Barrier).await {
            Ok(r) => r,
            Err(e) => {
                self.rec.discard_failed(slot);
                return Err(e.into());
            }
        };
        tracing::info!(sensor = %hello.sensor, ?trace, samples, "driver connected");
        let mut reply = json!({"ok": true, "trace": trace, "samples": samples});
        if !hello.files.is_empty() {
            // Taken: in `trace` (when recording) and in every trace it opens for this
            // connection (protocol.md 2.6).
            reply["files"] = json!(true);
        }
        if trace.is_none() {
            if let Some(why) = self.rec.stopped_reason() {
                reply["stopped_reason"] = json!(why);
            }
        }
        self.write(reply).await?;
        self.frames(hello, layout, slot).await
    }

    async fn write(&mut self, v: Value) -> Result<(), ConnError> {
        self.stream
            .write_all(&line(v))
            .await
            .map_err(ConnError::Write)
    }

    /// Receives frames until the stream ends or an error; whichever way the connection ends,
    /// frames fully received are queued and pending drops reach the event log.
    async fn frames(
        &mut self,
        hello: &Hello,
        layout: &FrameLayout,
        slot: &Arc<Slot>,
    ) -> Result<(), ConnError> {
        let mut t = Tally {
            seq: hello.seq,
            ..Tally::default()
        };
        let result = self.receive(&mut t, hello, layout, slot).await;
        // Frames fully received before an error are kept.
        let sent = self.send(slot, &mut t);
        if let Some(d) = t.drops.take() {
            self.drop_event(&hello.sensor, &d);
        }
        self.end_repeats(&mut t, &hello.sensor);
        let result = result.and(sent);
        if result.is_ok() && self.owes_final(hello) {
            return self.final_ack(hello, slot).await;
        }
        result
    }

    /// The loop of [`Connection::frames`]; every way out of it, `?` included, goes back there.
    async fn receive(
        &mut self,
        t: &mut Tally,
        hello: &Hello,
        layout: &FrameLayout,
        slot: &Arc<Slot>,
    ) -> Result<(), ConnError> {
        let mut want;
        loop {
            // Check frames in place after the pending run.
            loop {
                match layout.check(&self.buf[t.pend_bytes..], t.frame_no) {
                    Err(e) => return Err(e.into()),
                    Ok(Check::Incomplete(n)) => {
                        // Bytes needed from the frame's start, which is where `buf` starts
                        // once the pending run is sent (below).
                        want = n;
                        break;
                    }
                    Ok(Check::SyncRequest) => {
                        self.send(slot, t)?;
                        self.buf.advance(4);
                        // The reply must find every drop so far in the event log.
                        if let Some(d) = t.drops.take() {
                            self.drop_event(&hello.sensor, &d);
                        }
                        self.end_repeats(t, &hello.sensor);
                        match slot.ask(WriterMsg::Sync).await {
                            Ok(n) => self.write(durable_reply(&self.rec, n)).await?,
                            Err(error) => {
                                return Err(ConnError::SensorFailed {
                                    sensor: hello.sensor.clone(),
                                    error,
                                })
                            }
                        }
                    }
                    Ok(Check::Frame { total, ts, seq }) => {
                        let recv = now_epoch();
                        slot.stats.note_clock(recv - ts);
                        if self.admit(t, hello, slot, total, ts, seq).await? {
                            t.pend_bytes += total;
                            t.pend_frames += 1;
                            t.pend_cost += total;
                            t.pend_recv.push(recv);
                        } else {
                            self.send(slot, t)?;
                            self.buf.advance(total);
                        }
                    }
                }
            }
            self.send(slot, t)?;
            debug_assert_eq!(t.pend_bytes, 0);
            if let Some(f) = slot.stats.failure() {
                return Err(ConnError::SensorFailed {
                    sensor: hello.sensor.clone(),
                    error: WriterError::Failed(f),
                });
            }
            // A large frame with nothing pending before it: received into a pooled buffer
            // and queued as it is (see `bufpool`).
            let got = if want >= POOLED_FRAME {
                match self.read_large(want).await {
                    Ok(Ok(big)) => {
                        let Check::Frame { total, ts, seq } =
                            layout.check(big.as_ref(), t.frame_no)?
                        else {
                            unreachable!("a whole frame checks as a frame or an error");
                        };
                        let recv = now_epoch();
                        slot.stats.note_clock(recv - ts);
                        if self.admit(t, hello, slot, total, ts, seq).await? {
                            self.send_batch(slot, big.into_bytes(), 1, total, t.seq, vec![recv])?;
                        }
                        continue;
                    }
                    Ok(Err(partial)) => Ok(Some(partial)),
                    Err(e) => Err(e),
                }
            } else {
                self.fill(want)
                    .await
                    .map(|more| if more { None } else { Some(self.buf.len()) })
            };
            match got {
                Ok(None) => {}
                Ok(Some(partial)) => {
                    if partial > 0 {
                        self.rec.event(Event::PartialFrame {
                            sensor: hello.sensor.clone(),
                            frame: t.frame_no,
                            bytes: partial as u64,
                        });
                    }
                    // The end of the stream, or of the drain at shutdown: either way the
                    // driver sees EOF without an error line (protocol.md 6).
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The bookkeeping of one received, valid frame: clock steps, sequence gaps, and its
    /// place in the sensor's byte budget (waiting for it under `block`). Returns whether the
    /// frame is to be queued (false: dropped and counted).
    async fn admit(
        &mut self,
        t: &mut Tally,
        hello: &Hello,
        slot: &Arc<Slot>,
        total: usize,
        ts: f64,
        seq: u64,
    ) -> Result<bool, ConnError> {
        let sensor = hello.sensor.as_str();
        let no = t.frame_no;
        t.frame_no += 1;
        slot.stats
            .last_frame_ms
            .store(self.rec.epoch.elapsed().as_millis() as u64, Relaxed);
        slot.stats.received.fetch_add(1, Relaxed);
        // With `dedup`, the open trace (by when it was opened) the frame would go to.
        let dedup = hello.dedup.then(|| self.rec.trace_opened()).flatten();
        if let Some(trace) = dedup {
            if self.repeat(t, sensor, slot, trace, no, seq, ts) {
                return Ok(false);
            }
        }
        if let Some(prev) = t.last_ts {
            if ts < prev {
                slot.stats.clock_steps.fetch_add(1, Relaxed);
                self.rec.event(Event::ClockStep {
                    sensor: sensor.to_string(),
                    frame: Some(no),
                    kind: None,
                    from: prev,
                    to: ts,
                    moves: None,
                });
            }
        }
        t.last_ts = Some(ts);
        if hello.seq {
            if let Some(p) = t.last_seq {
                if seq > p.wrapping_add(1) && seq > p {
                    let missing = seq - p - 1;
                    slot.stats.gaps.fetch_add(missing, Relaxed);
                    self.rec.event(Event::Gap {
                        sensor: sensor.to_string(),
                        frame: no,
                        missing,
                        after_seq: p,
                        seq,
                        ts,
                    });
                } else if seq <= p {
                    self.rec.event(Event::SeqReset {
                        sensor: sensor.to_string(),
                        frame: no,
                        after_seq: p,
                        seq,
                    });
                }
            }
            t.last_seq = Some(seq);
        }
        let got = match slot.budget.try_acquire_many(total as u32) {
            Ok(p) => {
                p.forget();
                true
            }
            // Closed when the writer thread has ended: not a full queue, and not a drop.
            Err(TryAcquireError::Closed) => {
                return Err(WriterError::ended(&slot.name).into());
            }
            Err(_) if self.rec.cfg.ingest.queue_policy == QueuePolicy::Block => {
                self.send(slot, t)?;
                match slot.budget.acquire_many(total as u32).await {
                    Ok(p) => p.forget(),
                    Err(_) => return Err(WriterError::ended(&slot.name).into()),
                }
                true
            }
            Err(_) => false,
        };
        if got {
            if let Some(trace) = dedup {
                slot.seen.lock_or_recover().written(trace, seq, ts);
            }
            if let Some(d) = t.drops.take() {
                self.drop_event(sensor, &d);
            }
            slot.stats.note_fill(slot.queue_fill());
        } else {
            slot.stats.drops.fetch_add(1, Relaxed);
            let d = t.drops.get_or_insert(DropRun {
                count: 0,
                first_frame: no,
                first_ts: ts,
                last_ts: ts,
            });
            d.count += 1;
            d.last_ts = ts;
        }
        Ok(got)
    }

    /// Receives the rest of a frame of `total` bytes, whose start is all `buf` holds, into a
    /// pooled buffer. `Ok(Err(n))`: the stream ended (or the drain went quiet) with `n` bytes
    /// of the frame received.
    async fn read_large(&mut self, total: usize) -> Result<Result<PoolBuf, usize>, ConnError> {
        let mut big = self.pool.take(total);
        let mut filled = self.buf.len();
        big.as_mut()[..filled].copy_from_slice(&self.buf);
        self.buf.clear();
        while filled < total {
            match self.read_into(&mut big.as_mut()[filled..]).await? {
                0 => return Ok(Err(filled)),
                n => filled += n,
            }
        }
        Ok(Ok(big))
    }

    fn drop_event(&self, sensor: &str, d: &DropRun) {
        self.rec.event(Event::Drop {
            sensor: sensor.to_string(),
            count: d.count,
            first_frame: d.first_frame,
            from_ts: d.first_ts,
            to_ts: d.last_ts,
        });
    }

    /// Sends the pending run of accepted frames to the writer as one `Bytes`.
    fn send(&mut self, slot: &Slot, t: &mut Tally) -> Result<(), ConnError> {
        if t.pend_frames == 0 {
            return Ok(());
        }
        let n = t.pend_bytes;
        // A queued run keeps its whole receive allocation alive, but the byte budget charges
        // only the run: hand the allocation over without a copy only when the run fills most
        // of it (large frames); otherwise copy the run out (small frames, cheap) and keep
        // reading into the same buffer, so memory stays within the budget plus 25 %.
        let data = if self.buf.capacity() <= n + n / 4 {
            self.buf.split_to(n).freeze()
        } else {
            let d = bytes::Bytes::copy_from_slice(&self.buf[..n]);
            bytes::Buf::advance(&mut self.buf, n);
            d
        };
        let (frames, cost) = (t.pend_frames, t.pend_cost);
        (t.pend_bytes, t.pend_frames, t.pend_cost) = (0, 0, 0);
        let recv = std::mem::take(&mut t.pend_recv);
        self.send_batch(slot, data, frames, cost, t.seq, recv)
    }

    fn send_batch(
        &self,
        slot: &Slot,
        data: bytes::Bytes,
        frames: u32,
        cost: usize,
        seq: bool,
        recv: Vec<f64>,
    ) -> Result<(), ConnError> {
        let msg = WriterMsg::Batch {
            data,
            frames,
            cost,
            seq,
            recv,
        };
        slot.tx
            .send(msg)
            .map_err(|_| WriterError::ended(&slot.name).into())
    }
}
