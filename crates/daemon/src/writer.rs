//! One writer thread per sensor: drains the sensor's queue into a
//! [`roverlog_core::format::SensorWriter`], flushes to the kernel every `flush_interval_ms`, fsyncs per
//! the [`FsyncPolicy`], keeps the durable watermark, and remembers a failure.
//!
//! The queue carries batches of whole, already validated frames (the connection task checked
//! them), plus control messages in the same order as the frames: a trace switch (`Open`) or a
//! durability request is therefore an exact cut in the sensor's sample stream.
//!
//! File I/O is blocking, so this is a plain thread, not a tokio task. `lzmaf` samples are
//! compressed by the daemon's one pool (`crate::compress`, `compress_threads` for all sensors),
//! off the ingest path, frame by frame through the writer's lane, and appended pre-compressed
//! with `SensorWriter::append_encoded` in order as they come back; when compression falls
//! behind they are stored uncompressed instead (`fallback`).

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::compress::{CompressPool, Lane};
use tokio::sync::{mpsc, oneshot, Semaphore};

mod batch;
mod fallback;
mod trace_files;

use super::config::FsyncPolicy;
use super::events::{Event, EventLog};
use super::failure::{SensorFailure, WriterError};
use super::protocol::FrameLayout;
use super::sidecar::Sidecars;
use super::stats::SensorStats;
use roverlog_core::format::meta::META_FILE;
use roverlog_core::format::{
    recover_sensor_to, ChannelFormat, SensorMeta, SensorWriter as FileWriter, WriterOptions,
};

/// A reply carrying a sample count, or why there is none.
pub type CountReply = oneshot::Sender<Result<u64, WriterError>>;

/// The reply to a hello's barrier: the sample count and the name of the trace it counts in
/// (`None`: no trace open), read together by the writer.
pub type BarrierReply = oneshot::Sender<Result<(u64, Option<String>), WriterError>>;

/// What a sensor's queue carries.
pub enum WriterMsg {
    /// Whole frames back to back (each with its `u32` length); `cost` permits of the queue's
    /// byte budget are returned once they are written. `seq`: the frames carry a sequence
    /// number (the connection's hello said so).
    Batch {
        data: Bytes,
        frames: u32,
        cost: usize,
        seq: bool,
        /// The daemon's receive time of each frame (epoch seconds).
        recv: Vec<f64>,
    },
    /// fsync now; reply with the durable count and the trace it counts in (`None`: no
    /// trace open).
    Sync(BarrierReply),
    /// Reply with the sample count, and the trace it counts in, once everything queued
    /// before is written.
    Barrier(BarrierReply),
    /// Finish the current trace's files (if any) and create or resume `<trace>/<sensor>`,
    /// putting `files` there (before `meta.json` in a new directory, see `sidecar`).
    Open {
        trace: PathBuf,
        events: Arc<EventLog>,
        files: Sidecars,
        reply: CountReply,
        /// Given the final count of the trace it leaves, if one was open (a rotation's
        /// `stop` line records it).
        left: Option<CountReply>,
    },
    /// A new connection's sidecar files: put them into the open trace's sensor directory
    /// (none open: nothing to do); reply with how many were written.
    Files {
        files: Sidecars,
        reply: oneshot::Sender<Result<usize, WriterError>>,
    },
    /// Finish the current trace's files; reply with the final count.
    Close(CountReply),
    /// Finish and end the thread.
    Exit,
}

/// Something the daemon must act on.
#[derive(Debug)]
pub enum WriterNotice {
    /// A write, fsync or open of the sensor's files failed (see `disk_fault`): a full disk
    /// stops the recording of `fault.trace`, another error has the data root probed.
    DiskError {
        fault: super::disk_fault::Fault,
        /// The failure as the sensor's error says it.
        error: String,
    },
}

/// Fixed settings of a writer.
#[derive(Clone)]
pub struct WriterSettings {
    pub opts: WriterOptions,
    /// `snapshot` on: batches received while no trace is open are kept here.
    pub snapshot: Option<Arc<super::snapshot::SnapshotRing>>,
    pub flush_interval: Duration,
    pub fsync: FsyncPolicy,
    pub debug_delay: Duration,
    /// The daemon's `lzmaf` compression pool, shared by every sensor.
    pub pool: Arc<CompressPool>,
    /// Store `lzmaf` frames uncompressed when more than this fraction of the queue waits
    /// (config `lzmaf_store_above`, see `fallback`).
    pub lzmaf_store_above: f64,
    /// Test knob: each `lzmaf` frame's compression takes this much longer.
    pub compress_delay: Duration,
    /// The daemon's start, for `last_fsync_ms` and the heartbeat.
    pub epoch: Instant,
    /// The writer beats at least this often while idle (see [`SensorStats::beat`]): well
    /// within the watchdog's bound, so only a writer stuck in I/O stops the pings.
    pub heartbeat: Duration,
    /// The live Foxglove feed (config `foxglove_listen`).
    pub live: Option<Arc<super::foxglove_live::LiveHub>>,
    /// Where a failed write or fsync is registered for the `disk_error` alarm.
    pub faults: super::disk_fault::Faults,
}

struct Open {
    files: FileWriter,
    /// This trace's files have the daemon's `ts_recv` channel (a trace resumed from an older
    /// daemon may not).
    recv: bool,
    events: Arc<EventLog>,
    /// Appended since the last flush / fsync.
    unflushed: bool,
    unsynced_bytes: u64,
    last_flush: Instant,
    last_sync: Instant,
}

/// The state of one writer thread.
pub struct Writer {
    sensor: String,
    meta: SensorMeta,
    /// The frame layout without and with a sequence number.
    layouts: [FrameLayout; 2],
    settings: WriterSettings,
    rx: Receiver<WriterMsg>,
    budget: Arc<Semaphore>,
    stats: Arc<SensorStats>,
    notices: mpsc::UnboundedSender<WriterNotice>,
    open: Option<Open>,
    /// Positions (among the data channels) of the channels stored as `lzmaf`.
    lzmaf: Vec<usize>,
    /// The stored channels end with the daemon's `ts_recv` (not sent by the driver).
    recv: bool,
    /// This sensor's view of the live Foxglove feed.
    live: Option<super::foxglove_live::LiveTap>,
    /// When compression falls behind (see `fallback`).
    fallback: fallback::StoreFallback,
    /// After a failure: the sensor directory given up and the count of its last good fsync.
    /// Reopening that directory cuts it there first (see `disk_fault`).
    given_up: Option<(PathBuf, u64)>,
    /// This sensor's lane of the compression pool (`None`: no `lzmaf` channel).
    lane: Option<Lane<batch::Pending>>,
    /// Queue permits of the batch in hand whose frames went to the lane (they go back as the
    /// frames are appended; see `batch::Pending::permits`).
    permits_in_lane: usize,
}

impl Writer {
    /// A writer for `sensor`, storing `meta` (formats after overrides) from frames laid out
    /// as `layout`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sensor: String,
        meta: SensorMeta,
        layout: FrameLayout,
        settings: WriterSettings,
        rx: Receiver<WriterMsg>,
        budget: Arc<Semaphore>,
        stats: Arc<SensorStats>,
        notices: mpsc::UnboundedSender<WriterNotice>,
    ) -> Writer {
        let lzmaf: Vec<usize> = meta
            .data_channels()
            .enumerate()
            .filter(|(_, (_, c))| c.format == ChannelFormat::Lzmaf)
            .map(|(i, _)| i)
            .collect();
        let declared = layout.channel_count();
        let recv = meta.data_channels().count() == declared + 1
            && meta.data_channels().last().map(|(n, _)| n)
                == Some(super::config::RECEIVE_TS_CHANNEL);
        let live = settings.live.as_ref().map(|h| h.tap(&sensor, &meta));
        let lane = (!lzmaf.is_empty()).then(|| {
            let (stats, epoch) = (stats.clone(), settings.epoch);
            Lane::new(
                settings.pool.clone(),
                settings.opts.lzmaf_preset,
                settings.compress_delay,
                Arc::new(move || stats.beat(epoch)),
            )
        });
        Writer {
            lane,
            permits_in_lane: 0,
            fallback: fallback::StoreFallback::new(settings.lzmaf_store_above),
            lzmaf,
            recv,
            live,
            sensor,
            meta,
            layouts: [layout.with_seq(false), layout.with_seq(true)],
            settings,
            rx,
            budget,
            stats,
            notices,
            open: None,
            given_up: None,
        }
    }

    /// The thread's body: runs until `Exit` or until every sender is gone.
    ///
    /// A panic (a bug) fails this sensor like a write error would, and the writer goes on
    /// answering its queue with that failure, so the driver gets an error instead of a
    /// connection that hangs with its queue never drained; the other sensors keep running.
    pub fn run(mut self) {
        let mut panics = 0;
        while let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.serve())) {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            self.fail_with(SensorFailure::Panic { panic: msg });
            panics += 1;
            if panics > 1 {
                break;
            }
        }
        // Nothing gives permits back from here on: a `block` connection waiting for queue
        // space would wait forever. Closing the budget answers it with an error instead.
        self.budget.close();
    }

    fn serve(&mut self) {
        let rx = self.rx.clone();
        loop {
            self.beat();
            let timeout = self.next_timer();
            // With frames in the compression pool, their results wake the writer too: each
            // is appended as soon as it and the frames before it are back.
            let results = self
                .lane
                .as_ref()
                .filter(|l| !l.is_empty())
                .map(|l| l.results().clone());
            let msg = match results {
                Some(results) => crossbeam_channel::select! {
                    recv(rx) -> m => match m {
                        Ok(m) => Some(m),
                        Err(_) => break,
                    },
                    recv(results) -> d => {
                        if let (Ok(d), Some(lane)) = (d, self.lane.as_mut()) {
                            lane.take(d);
                        }
                        self.append_done();
                        None
                    },
                    default(timeout) => None,
                },
                None => match rx.recv_timeout(timeout) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break,
                },
            };
            if let Some(m) = msg {
                if !self.handle(m) {
                    return;
                }
                self.beat();
                // Take what is already queued without sleeping, but look at the timers after
                // each message: with a backlog (slow disk, compression) a message can take
                // long, and the periodic fsync must not wait for 256 of them.
                for _ in 0..256 {
                    self.append_done();
                    match rx.try_recv() {
                        Ok(m) => {
                            if !self.handle(m) {
                                return;
                            }
                            self.beat();
                            self.timers();
                        }
                        Err(_) => break,
                    }
                }
            }
            self.timers();
        }
        let _ = self.close();
    }

    /// Proves progress to the watchdog (see [`SensorStats::beat`]).
    fn beat(&self) {
        self.stats.beat(self.settings.epoch);
    }

    fn next_timer(&self) -> Duration {
        let idle = self.settings.heartbeat.min(Duration::from_secs(1));
        let Some(o) = &self.open else {
            return idle;
        };
        let now = Instant::now();
        let mut due = now + idle;
        if o.unflushed {
            due = due.min(o.last_flush + self.settings.flush_interval);
        }
        if let FsyncPolicy::Periodic { interval, .. } = self.settings.fsync {
            if o.unsynced_bytes > 0 {
                due = due.min(o.last_sync + interval);
            }
        }
        due.saturating_duration_since(now)
    }

    fn timers(&mut self) {
        let now = Instant::now();
        let Some(o) = &self.open else { return };
        let sync_due = match self.settings.fsync {
            FsyncPolicy::Periodic { interval, bytes } => {
                o.unsynced_bytes > 0 && (now >= o.last_sync + interval || o.unsynced_bytes >= bytes)
            }
            FsyncPolicy::OnRequest => false,
        };
        let flush_due = o.unflushed && now >= o.last_flush + self.settings.flush_interval;
        if sync_due {
            let _ = self.sync();
        } else if flush_due {
            self.flush();
        }
    }

    /// Handles one message; `false` ends the thread.
    fn handle(&mut self, msg: WriterMsg) -> bool {
        match msg {
            WriterMsg::Batch {
                data,
                frames,
                cost,
                seq,
                recv,
            } => {
                // The permits go back even if writing panics (see `run`): lost permits would
                // shrink the budget until a `block` driver waits forever.
                if self.open.is_none() && self.stats.failure().is_none() {
                    if let Some(ring) = self.settings.snapshot.as_ref().filter(|r| r.enabled()) {
                        ring.push(super::snapshot::Held {
                            sensor: self.sensor.clone(),
                            at: Instant::now(),
                            data,
                            frames,
                            seq,
                            recv,
                            stats: self.stats.clone(),
                        });
                        self.budget.add_permits(cost);
                        return true;
                    }
                }
                self.permits_in_lane = 0;
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.write_batch(&data, frames, seq, &recv, cost)
                }));
                // Those of frames in the compression pool go back as they are appended.
                self.budget
                    .add_permits(cost.saturating_sub(self.permits_in_lane));
                if let Err(p) = r {
                    std::panic::resume_unwind(p);
                }
                if let FsyncPolicy::Periodic { bytes, .. } = self.settings.fsync {
                    if self
                        .open
                        .as_ref()
                        .is_some_and(|o| o.unsynced_bytes >= bytes)
                    {
                        let _ = self.sync();
                    }
                }
            }
            WriterMsg::Sync(reply) => {
                self.append_all();
                let r = self.sync().map(|n| (n, self.trace_name()));
                let _ = reply.send(r);
            }
            WriterMsg::Barrier(reply) => {
                self.append_all();
                let r = match self.stats.failure() {
                    Some(f) => Err(WriterError::Failed(f)),
                    None => Ok((
                        self.open.as_ref().map_or(0, |o| o.files.len()),
                        self.trace_name(),
                    )),
                };
                let _ = reply.send(r);
            }
            WriterMsg::Open {
                trace,
                events,
                files,
                reply,
                left,
            } => {
                let had_open = self.open.is_some();
                let closed = self.close();
                if let Some(left) = left.filter(|_| had_open) {
                    let _ = left.send(closed);
                }
                let r = self.open(trace, events, &files);
                // The snapshot ring's frames first: they came before anything still queued.
                if r.is_ok() {
                    if let Some(ring) = self.settings.snapshot.clone() {
                        let held = ring.take(&self.sensor);
                        let frames: u64 = held.iter().map(|h| u64::from(h.frames)).sum();
                        for h in &held {
                            self.write_batch(&h.data, h.frames, h.seq, &h.recv, 0);
                        }
                        if let Some(o) = self.open.as_ref().filter(|_| frames > 0) {
                            o.events.write(Event::Snapshot {
                                sensor: self.sensor.clone(),
                                frames,
                            });
                        }
                    }
                }
                let _ = reply.send(r);
            }
            WriterMsg::Files { files, reply } => {
                let r = match &self.open {
                    Some(o) => super::sidecar::reconcile(o.files.dir(), &files)
                        .map_err(|e| WriterError::Sidecar(Arc::new(e))),
                    None => Ok(0),
                };
                let _ = reply.send(r);
            }
            WriterMsg::Close(reply) => {
                let _ = reply.send(self.close());
            }
            WriterMsg::Exit => {
                let _ = self.close();
                if let Some(ring) = &self.settings.snapshot {
                    ring.discard(&self.sensor);
                }
                return false;
            }
        }
        true
    }

    fn flush(&mut self) {
        let Some(o) = self.open.as_mut() else { return };
        match o.files.flush() {
            Ok(()) => {
                o.unflushed = false;
                o.last_flush = Instant::now();
            }
            Err(e) => {
                self.fail("flush", e);
            }
        }
    }

    /// The trace this writer's count belongs to (the recorder makes a new trace current
    /// before each writer switches to it, so the writer names it).
    fn trace_name(&self) -> Option<String> {
        let o = self.open.as_ref()?;
        let trace = o.files.dir().parent()?.file_name()?;
        Some(trace.to_string_lossy().into_owned())
    }

    fn sync(&mut self) -> Result<u64, WriterError> {
        if let Some(f) = self.stats.failure() {
            return Err(WriterError::Failed(f));
        }
        let Some(o) = self.open.as_mut() else {
            return Ok(0);
        };
        // `SensorWriter::sync` hands every channel to the kernel before the first fsync.
        match o.files.sync() {
            Ok(n) => {
                let now = Instant::now();
                o.unflushed = false;
                o.unsynced_bytes = 0;
                o.last_flush = now;
                o.last_sync = now;
                self.stats.durable.store(n, Relaxed);
                self.stats.last_fsync_ms.store(
                    now.duration_since(self.settings.epoch).as_millis() as u64,
                    Relaxed,
                );
                Ok(n)
            }
            // The reply names the error itself; the failure says it was the fsync's.
            Err(e) => Err(WriterError::Sync(self.fail("fsync", e))),
        }
    }

    /// A write, flush or fsync failed: those files are not trusted again (the format library
    /// remembers the failure too); the sensor is reported failed, the others keep running.
    /// Returns the error, shared with the failure.
    fn fail(&mut self, what: &'static str, e: roverlog_core::Error) -> Arc<roverlog_core::Error> {
        let e = Arc::new(e);
        self.fail_with(SensorFailure::Io {
            what,
            source: e.clone(),
        });
        e
    }

    /// [`Writer::fail`] for any failure; its error tells whether the disk is full.
    fn fail_with(&mut self, failure: SensorFailure) {
        let failure = Arc::new(failure);
        let msg = failure.to_string();
        tracing::error!(sensor = %self.sensor, "{msg}");
        self.stats.set_failed(failure.clone());
        // Frames still in the compression pool are lost with the files.
        if let Some(lane) = self.lane.as_mut() {
            let lost = lane.discard();
            self.stats.discarded.fetch_add(lost.len() as u64, Relaxed);
            self.budget
                .add_permits(lost.iter().map(|f| f.permits).sum());
        }
        if let Some(o) = self.open.take() {
            self.fallback.report(&o.events, &self.sensor);
            let dir = o.files.dir().to_path_buf();
            let durable = self.stats.durable.load(Relaxed);
            if let (SensorFailure::Io { what, source }, Some(trace)) = (&*failure, dir.parent()) {
                self.notice(
                    super::disk_fault::Fault::new(&self.sensor, what, source, durable, trace),
                    &msg,
                );
            }
            o.events.write(Event::Error {
                sensor: self.sensor.clone(),
                error: msg.clone(),
            });
            // The files are dropped, not finished: finishing would retry the failed write.
            drop(o.files);
            self.recover_after_failure(&dir, &o.events, durable);
        }
    }

    /// Registers `fault` for the `disk_error` alarm and tells the daemon (a full disk stops
    /// the recording; another error has the disk probed).
    fn notice(&self, fault: super::disk_fault::Fault, error: &str) {
        self.settings.faults.raise(fault.clone());
        let _ = self.notices.send(WriterNotice::DiskError {
            fault,
            error: error.to_string(),
        });
    }

    /// After a failed write, flush or fsync the sensor's files may end in a torn sample or
    /// disagree on their count (a full disk stops one channel mid-sample), and what was
    /// written since the last good fsync (`durable` samples) is not trusted: a failed fsync
    /// may have dropped those pages while a read still finds them in the cache, and a later
    /// fsync would call them durable (fsyncgate). Cut every channel back to `durable` now,
    /// while the failure is known; a reopen of the directory cuts there again (`given_up`).
    /// Shortening files needs no free space, so this works on a full disk.
    fn recover_after_failure(&mut self, dir: &std::path::Path, events: &EventLog, durable: u64) {
        self.given_up = Some((dir.to_path_buf(), durable));
        match recover_sensor_to(dir, Some(durable)) {
            Ok(r) => {
                let cuts: Vec<String> = r.cuts.iter().map(|c| c.to_string()).collect();
                tracing::warn!(sensor = %self.sensor, len = r.len, "recovered after a write failure: {cuts:?}");
                events.write(Event::Recovered {
                    sensor: self.sensor.clone(),
                    len: r.len,
                    cuts,
                    left_alone: r.left_alone.iter().map(|p| p.to_string()).collect(),
                    after: Some("write failure".into()),
                });
                self.stats.samples.store(r.len, Relaxed);
            }
            Err(e) => {
                let msg =
                    format!("recovery after the failure failed: {e} (run `roverlog recover`)");
                tracing::error!(sensor = %self.sensor, "{msg}");
                events.write(Event::Error {
                    sensor: self.sensor.clone(),
                    error: msg,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
