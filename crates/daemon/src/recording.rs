//! The recorder: which trace is open, which sensors exist, and the operations on them (attach
//! a connection, start, stop, rotate, mark, status, recover a crashed trace).
//!
//! A sensor ([`Slot`]) lives from its first hello until its trace closes with no connection
//! attached; its writer thread lives as long. Trace switches are messages in every sensor's
//! queue, so each sensor cuts its sample stream exactly at the switch.
//!
//! The state sits behind a `std` mutex that is never held across an `.await`; start, stop and
//! rotate are serialised by an async mutex so their replies can be awaited.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;

use crate::command::{Count, Counts, Marked, Refusal, Started, Stopped};
use crate::config::{validate_label, Config};
use crate::events::{readable_events, Event, EventLog};
use crate::failure::WriterError;
use crate::foxglove_live::LiveHub;
use crate::health::Alarms;
use crate::snapshot::{SnapshotRing, Triggers};
use crate::writer::{WriterMsg, WriterNotice, WriterSettings};
use roverlog_core::error::{Error, Result};
use roverlog_core::format::meta::write_file_atomic;
use roverlog_core::format::trace::CONFIG_FILE;
use roverlog_core::format::WriterOptions;

use crate::poison::LockExt;
use crate::traces::created_at;
pub use crate::traces::{local_timestamp, recover_unfinished};

mod sensors;
mod status;
mod trigger;
pub use crate::slot::Slot;
pub use sensors::AttachError;
pub use status::{DiskStatus, HttpStatus, SensorStatus, Status};

/// The open trace.
pub struct OpenTrace {
    pub name: String,
    pub dir: PathBuf,
    pub events: Arc<EventLog>,
    pub opened: Instant,
    /// How old the trace already was when this daemon opened it: 0 for a new trace, the time
    /// since its creation for one resumed after a crash (`rotate_seconds` counts from its
    /// creation, as `rotate_bytes` counts all of its bytes).
    pub age_before: std::time::Duration,
    /// The label the trace was started with; a rotation without one keeps it.
    pub label: Option<String>,
}

struct State {
    trace: Option<OpenTrace>,
    slots: BTreeMap<String, Arc<Slot>>,
    /// Why recording stopped on its own (disk guard, ENOSPC), for status.
    stopped_reason: Option<String>,
    /// The disk stopped the recording ([`Recorder::stop_for`]): the daemon starts a new trace
    /// once the data root is usable again (`disk_fault`); a `start` or `stop` ends the wait.
    awaits_disk: bool,
    disk_free: Option<u64>,
}

/// A sensor's final count as a reply and the `stop` event record it.
fn count(r: std::result::Result<u64, WriterError>) -> Count {
    match r {
        Ok(samples) => Count::Samples { samples },
        Err(e) => Count::Error {
            error: e.to_string(),
        },
    }
}

/// The recorder shared by every task.
pub struct Recorder {
    pub cfg: Arc<Config>,
    settings: WriterSettings,
    notices: mpsc::UnboundedSender<WriterNotice>,
    state: Mutex<State>,
    ops: tokio::sync::Mutex<()>,
    pub epoch: Instant,
    /// The health alarms active now (written by `health`, shown in `status`).
    alarms: Alarms,
    /// Which trace the last `trigger` started (see `snapshot`).
    triggers: Triggers,
    /// The dashboard's address and mode, once it listens (`status` `http`).
    http: Mutex<Option<HttpStatus>>,
    /// The background offload, when configured (`status` `offload`).
    offload: Mutex<Option<Arc<crate::offload::Offloader>>>,
}

impl Recorder {
    /// A recorder with no trace open; writer failures that need the daemon go to `notices`.
    /// With a `watchdog` timeout, idle writers beat often enough to stay well within it.
    pub fn new(
        cfg: Arc<Config>,
        notices: mpsc::UnboundedSender<WriterNotice>,
        watchdog: Option<std::time::Duration>,
    ) -> crate::error::Result<Self> {
        let epoch = Instant::now();
        let settings = WriterSettings {
            snapshot: Some(Arc::new(SnapshotRing::new(
                cfg.snapshot.enabled,
                cfg.snapshot.bytes,
                cfg.snapshot.pre_trigger,
            ))),
            opts: WriterOptions {
                buffer_bytes: cfg.storage.buffer_bytes,
                lzmaf_preset: cfg.storage.lzmaf_preset,
                direct_io_min_sample_bytes: cfg.storage.direct_io_min_sample_bytes,
                writeback_bytes: cfg.durability.writeback_bytes,
                blob_sync_threads: cfg.durability.blob_sync_threads,
                blob_max_open: cfg.durability.blob_max_open_files,
            },
            flush_interval: cfg.durability.flush_interval,
            fsync: cfg.durability.fsync,
            debug_delay: cfg.test_knobs.write_delay,
            pool: crate::compress::CompressPool::new(
                cfg.storage.compress_threads,
                cfg.storage.compress_inflight_bytes,
            ),
            lzmaf_store_above: cfg.storage.lzmaf_store_above,
            compress_delay: cfg.test_knobs.compress_delay,
            epoch,
            heartbeat: watchdog
                .map(|w| w / 4)
                .unwrap_or(std::time::Duration::from_secs(1))
                .max(std::time::Duration::from_millis(10)),
            live: LiveHub::new(&cfg.foxglove)?,
            faults: crate::disk_fault::Faults::default(),
        };
        Ok(Recorder {
            cfg,
            settings,
            notices,
            state: Mutex::new(State {
                trace: None,
                slots: BTreeMap::new(),
                stopped_reason: None,
                awaits_disk: false,
                disk_free: None,
            }),
            ops: tokio::sync::Mutex::new(()),
            epoch,
            alarms: Alarms::default(),
            triggers: Triggers::default(),
            http: Mutex::default(),
            offload: Mutex::default(),
        })
    }

    /// The live Foxglove feed, when configured.
    pub fn live(&self) -> Option<&Arc<LiveHub>> {
        self.settings.live.as_ref()
    }

    /// What an open trace's event log tells of each line: the live feed, when there is one.
    fn event_observer(&self) -> Option<crate::events::EventObserver> {
        let hub = self.live()?.clone();
        Some(Arc::new(move |line| hub.publish_event(line)))
    }

    /// The pre-trigger ring (see `snapshot`).
    pub fn snapshot_ring(&self) -> Option<&Arc<SnapshotRing>> {
        self.settings.snapshot.as_ref()
    }

    /// When the open trace was opened (by this daemon), if one is.
    pub fn trace_opened(&self) -> Option<Instant> {
        self.lock().trace.as_ref().map(|t| t.opened)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_or_recover()
    }

    /// The open trace's name and event log.
    pub fn current(&self) -> Option<(String, Arc<EventLog>)> {
        self.lock()
            .trace
            .as_ref()
            .map(|t| (t.name.clone(), t.events.clone()))
    }

    /// The open trace's directory.
    pub fn current_dir(&self) -> Option<PathBuf> {
        self.lock().trace.as_ref().map(|t| t.dir.clone())
    }

    /// Writes an event to the open trace, if any.
    pub fn event(&self, event: Event) {
        if let Some((_, ev)) = self.current() {
            ev.write(event);
        }
    }

    /// Creates a new trace directory `<data_root>/<YYYY.MM.DD-HH.MM.SS>[-label]` with
    /// `config.yaml`, and its event log.
    fn create_trace(&self, label: Option<&str>) -> Result<OpenTrace> {
        if let Some(l) = label {
            validate_label(l)?;
        }
        let root = &self.cfg.recording.data_root;
        roverlog_core::format::meta::create_dir_all_durable(root)?;
        let base = match label {
            Some(l) => format!("{}-{l}", local_timestamp()),
            None => local_timestamp(),
        };
        let mut name = base.clone();
        let mut n = 1;
        let dir = loop {
            let dir = root.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => {
                    n += 1;
                    name = format!("{base}.{n}");
                }
                Err(e) => return Err(Error::io(&dir, e)),
            }
        };
        let mut config = serde_json::to_vec_pretty(&*self.cfg).expect("config as JSON");
        config.push(b'\n');
        write_file_atomic(&dir.join(CONFIG_FILE), &config)?;
        roverlog_core::format::meta::sync_dir(root)?;
        let events = Arc::new(EventLog::open(&dir)?.observed(self.event_observer()));
        Ok(OpenTrace {
            name,
            dir,
            events,
            opened: Instant::now(),
            age_before: std::time::Duration::ZERO,
            label: label.map(str::to_string),
        })
    }

    /// Opens `trace` in every sensor's writer and waits for them. Also returns each sensor's
    /// final count in the trace it left, if it had one open (what a rotation's `stop` records).
    /// `from`: the trace a rotation left.
    async fn open_all(
        &self,
        trace: OpenTrace,
        reason: &str,
        from: Option<String>,
    ) -> (Started, Counts) {
        let (slots, stale, dir, events, name, label) = {
            let mut st = self.lock();
            // A sensor without a connection ends with the trace it has files in (a rotation
            // closes that trace): it is not carried into the new one.
            let stale: Vec<_> = st
                .slots
                .values()
                .filter(|s| !s.stats.connected.load(Relaxed))
                .cloned()
                .collect();
            for s in &stale {
                st.slots.remove(&s.name);
            }
            let slots: Vec<_> = st.slots.values().cloned().collect();
            let (dir, events, name) = (trace.dir.clone(), trace.events.clone(), trace.name.clone());
            let label = trace.label.clone();
            st.trace = Some(trace);
            st.stopped_reason = None;
            st.awaits_disk = false;
            (slots, stale, dir, events, name, label)
        };
        events.write(Event::Start {
            trace: name.clone(),
            reason: reason.to_string(),
            label,
            sensors: slots.iter().map(|s| s.name.clone()).collect(),
            from,
        });
        let mut left = Counts::default();
        for s in &slots {
            let (d, e) = (dir.clone(), events.clone());
            let (left_tx, left_rx) = tokio::sync::oneshot::channel();
            let _ = s
                .ask(|reply| WriterMsg::Open {
                    trace: d,
                    events: e,
                    files: s.files(),
                    reply,
                    left: Some(left_tx),
                })
                .await;
            // Dropped unanswered when the writer had no trace open.
            if let Ok(r) = left_rx.await {
                left.0.push((s.name.clone(), count(r)));
            }
        }
        for s in &stale {
            left.0
                .push((s.name.clone(), count(s.ask(WriterMsg::Close).await)));
            let _ = s.tx.send(WriterMsg::Exit);
        }
        tracing::info!(trace = %dir.display(), reason, "recording");
        (Started { trace: name, dir }, left)
    }

    /// Closes the open trace: every writer finishes (fsync), the stop event records each
    /// sensor's final count. Sensors without a connection are removed.
    async fn close_all(&self, reason: &str) -> Option<(String, Counts)> {
        let trace = {
            let st = self.lock();
            let t = st.trace.as_ref()?;
            (t.name.clone(), t.events.clone(), t.dir.clone())
        };
        // Closing waits for every writer; a sensor attached meanwhile opened its files in
        // this trace too, so it is closed as well. The trace ends (no more attaching to it)
        // once every sensor there was is closed.
        let mut counts = Counts::default();
        let mut closed: Vec<Arc<Slot>> = Vec::new();
        loop {
            let pending: Vec<_> = {
                let mut st = self.lock();
                let pending: Vec<_> = st
                    .slots
                    .values()
                    .filter(|s| !closed.iter().any(|c| Arc::ptr_eq(c, s)))
                    .cloned()
                    .collect();
                if pending.is_empty() {
                    st.trace = None;
                    break;
                }
                pending
            };
            for s in &pending {
                counts
                    .0
                    .push((s.name.clone(), count(s.ask(WriterMsg::Close).await)));
            }
            closed.extend(pending);
        }
        trace.1.write(Event::Stop {
            trace: trace.0.clone(),
            reason: reason.to_string(),
            sensors: counts.clone(),
        });
        trace.1.sync();
        let mut st = self.lock();
        let gone: Vec<String> = st
            .slots
            .iter()
            .filter(|(_, s)| !s.stats.connected.load(Relaxed))
            .map(|(n, _)| n.clone())
            .collect();
        for n in gone {
            if let Some(s) = st.slots.remove(&n) {
                let _ = s.tx.send(WriterMsg::Exit);
            }
        }
        tracing::info!(trace = %trace.2.display(), reason, "stopped recording");
        Some((trace.0, counts))
    }

    /// `start`: opens a new trace (an error when one is open).
    pub async fn start(&self, label: Option<&str>, reason: &str) -> Result<Started, Refusal> {
        let _op = self.ops.lock().await;
        if let Some((trace, _)) = self.current() {
            return Err(Refusal::AlreadyRecording { trace });
        }
        let t = self.create_trace(label)?;
        crate::clock_sync::record_with(&t.dir, "start");
        Ok(self.open_all(t, reason, None).await.0)
    }

    /// Continues an existing trace directory (after a crash).
    pub async fn resume(&self, dir: &Path) -> Result<Started, Refusal> {
        let _op = self.ops.lock().await;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The label it was started with (its last `start` event), for later rotations.
        let label = readable_events(dir)
            .into_iter()
            .rev()
            .find_map(|e| match e.event {
                Event::Start { label, .. } => Some(label),
                _ => None,
            })
            .flatten()
            .or_else(|| self.cfg.recording.label.clone());
        let ev = EventLog::open(dir)?.observed(self.event_observer());
        crate::clock_sync::record_with(dir, "resume");
        // Wall-clock time since its first event; 0 if the clock is behind it.
        let age = created_at(dir).map_or(0.0, |t| crate::events::now_epoch() - t);
        let t = OpenTrace {
            name,
            dir: dir.to_path_buf(),
            events: Arc::new(ev),
            opened: Instant::now(),
            age_before: std::time::Duration::try_from_secs_f64(age).unwrap_or_default(),
            label,
        };
        Ok(self.open_all(t, "resume", None).await.0)
    }

    /// `stop`: closes the open trace.
    pub async fn stop(&self, reason: &str) -> Result<Stopped, Refusal> {
        let _op = self.ops.lock().await;
        self.lock().awaits_disk = false;
        match self.close_all(reason).await {
            Some((trace, sensors)) => Ok(Stopped { trace, sensors }),
            None => Err(Refusal::NotRecording),
        }
    }

    /// Stops because of the disk (guard or ENOSPC): remembered for status.
    pub async fn stop_for(&self, why: String) {
        let _op = self.ops.lock().await;
        // The reason first: `status` must never show recording stopped without saying why
        // (closing waits for every writer, and status is answered meanwhile).
        {
            let mut st = self.lock();
            st.stopped_reason = Some(why.clone());
            st.awaits_disk = true;
        }
        if self.close_all(&why).await.is_some() {
            tracing::error!("recording stopped: {why}");
        }
    }

    /// Remembers for status why nothing is being recorded (e.g. autostart failed), unless a
    /// trace is open or a reason is already shown.
    pub fn note_not_recording(&self, why: String) {
        let mut st = self.lock();
        if st.trace.is_none() && st.stopped_reason.is_none() {
            st.stopped_reason = Some(why);
        }
    }

    /// `rotate`: a new trace with `label`, or without one the label of the trace it
    /// replaces; every sensor switches at one point of its stream.
    pub async fn rotate(&self, reason: &str, label: Option<&str>) -> Result<Started, Refusal> {
        let _op = self.ops.lock().await;
        let Some((old, old_events)) = self.current() else {
            return Err(Refusal::NotRecording);
        };
        let label = match label {
            Some(l) => Some(l.to_string()),
            None => self.lock().trace.as_ref().and_then(|t| t.label.clone()),
        };
        let t = self.create_trace(label.as_deref())?;
        crate::clock_sync::record_with(&t.dir, "rotate");
        let new = t.name.clone();
        // Written before the switch, so whoever sees the new trace finds this line.
        old_events.write(Event::Rotate {
            to: new.clone(),
            reason: reason.to_string(),
        });
        let (r, counts) = self.open_all(t, reason, Some(old.clone())).await;
        // A triggered trace's stop follows it into the next part (see `Recorder::trigger`).
        self.triggers.rotated(&old, &new);
        old_events.write(Event::Stop {
            trace: old,
            reason: "rotate".into(),
            sensors: counts,
        });
        old_events.sync();
        Ok(r)
    }

    /// `mark`: a text line in the event log.
    pub fn mark(&self, text: &str) -> Result<Marked, Refusal> {
        let (trace, ev) = self.current().ok_or(Refusal::NotRecording)?;
        ev.write(Event::Mark {
            text: text.to_string(),
        });
        Ok(Marked { trace })
    }

    /// The open trace's age and its sensors' appended bytes (for rotation by size/duration).
    pub fn trace_size(&self) -> Option<(std::time::Duration, u64)> {
        let st = self.lock();
        let t = st.trace.as_ref()?;
        let bytes = st.slots.values().map(|s| s.stats.bytes.load(Relaxed)).sum();
        Some((t.age_before + t.opened.elapsed(), bytes))
    }

    /// Records the last free-space reading.
    pub fn set_disk_free(&self, free: Option<u64>) {
        self.lock().disk_free = free;
    }

    /// Why recording may not start because of the disk, if it may not.
    pub fn disk_low(&self) -> Option<String> {
        let free = self.lock().disk_free?;
        (free < self.cfg.recording.min_free_bytes).then(|| {
            format!(
                "disk low: {free} bytes free under {}, below min_free_bytes {}",
                self.cfg.recording.data_root.display(),
                self.cfg.recording.min_free_bytes
            )
        })
    }

    /// The writers whose last heartbeat is older than `bound`, with its age in ms: stuck in
    /// a write or fsync (or ended without being removed). Empty when all make progress.
    pub fn stalled_writers(&self, bound: std::time::Duration) -> Vec<(String, u64)> {
        let now_ms = self.epoch.elapsed().as_millis() as u64;
        let bound = bound.as_millis() as u64;
        self.lock()
            .slots
            .values()
            .map(|s| (s.name.clone(), s.stats.heartbeat_age_ms(now_ms)))
            .filter(|(_, age)| *age > bound)
            .collect()
    }

    /// Whether the disk stopped the recording and nothing was started or stopped since: the
    /// daemon starts a new trace once the data root is usable again.
    pub fn awaits_disk(&self) -> bool {
        let st = self.lock();
        st.trace.is_none() && st.awaits_disk
    }

    /// Why recording stopped on its own, if it did.
    pub fn stopped_reason(&self) -> Option<String> {
        self.lock().stopped_reason.clone()
    }

    /// Every sensor, for the stats log line.
    pub fn slots(&self) -> Vec<Arc<Slot>> {
        self.lock().slots.values().cloned().collect()
    }

    /// Ends every writer thread (after [`Recorder::stop`]) and waits for them.
    pub fn join_writers(&self) {
        let slots: Vec<_> = std::mem::take(&mut self.lock().slots)
            .into_values()
            .collect();
        for s in &slots {
            let _ = s.tx.send(WriterMsg::Exit);
        }
        for s in slots {
            let t = s.thread.lock_or_recover().take();
            if let Some(t) = t {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests;
