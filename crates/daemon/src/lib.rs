//! `roverlog daemon`: the logging daemon. Drivers connect to the ingest socket (one
//! connection = one sensor, see [`protocol`]), the daemon writes roverd traces with the
//! [`roverlog_core::format`] library, and `roverlog ctl` talks to the control socket.
//!
//! - [`config`]: the JSON document ([`config::RawConfig`]) and its checked, typed sections
//!   ([`Config`]; [`config::QueuePolicy`], [`config::FsyncPolicy`]).
//! - [`protocol`]: sans-io hello and frame parsing.
//! - [`ingest`]: accept loop and per-connection tasks (tokio); [`dedup`]: the sequence
//!   numbers a sensor wrote in the open trace, to drop a driver's resent frames.
//! - [`writer`]: per-sensor writer threads (blocking file I/O, durability, failure);
//!   [`compress`]: the one `lzmaf` compression pool all writers share, in order per sensor;
//!   [`failure`]: why a sensor failed, and the writers' error replies.
//! - [`recording`]: traces and sensors: attach, start, stop, rotate, mark, status, crash
//!   recovery.
//! - [`command`]: the control commands and their replies as types, parsed once at the edge.
//! - [`control`]: the control socket. [`http`]: the dashboard (page and JSON API).
//!   [`foxglove_live`]: the live Foxglove feed. [`events`]: `events.jsonl`. [`stats`]: counters.
//! - [`netns`]: the warning when a TCP listener is in a namespace with only loopback.
//! - [`notify`]: systemd `sd_notify` (READY, STATUS, WATCHDOG, STOPPING) without libsystemd.
//! - [`malloc_policy`]: the glibc allocator thresholds the daemon sets at start.
//! - [`offload`]: the background offload of sealed traces (config `offload`).
//! - [`shutdown`]: the shutdown signal. [`sockets`]: atomic socket creation. [`disk`]: free
//!   space.
//!
//! A sample's path: socket → connection task (`BytesMut`, check in place, byte budget) →
//! crossbeam queue (`Bytes` runs of frames) → writer thread → `SensorWriter::append` (data
//! channels, then `ts`) → flush to the kernel every `flush_interval_ms` → fsync per
//! [`config::FsyncPolicy`] → durable watermark.

pub mod bufpool;
pub mod command;
pub mod compress;
pub mod config;
pub mod control;
pub mod dedup;
pub mod disk;
pub mod disk_fault;
pub mod error;
pub mod events;
pub mod failure;
pub mod foxglove_live;
pub mod health;
pub mod http;
pub mod ingest;
pub mod malloc_policy;
pub mod netns;
pub mod notify;
pub mod offload;
pub mod poison;
pub mod protocol;
pub mod recording;
pub mod shutdown;
pub mod slot;
pub mod snapshot;
pub mod sockets;
pub mod stats;
pub mod traces;
pub mod writer;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

pub use config::{Config, FsyncPolicy, QueuePolicy, RawConfig};

use crate::error::{Error, Result};
use recording::Recorder;
use writer::WriterNotice;

/// Something asked of a running daemon from outside its sockets (e.g. SIGHUP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Rotate to a new trace (SIGHUP).
    Rotate,
}

/// Service-manager notifications (`READY=1`, `STATUS=...`, `WATCHDOG=1`, `STOPPING=1`); the
/// binary plugs in sd_notify, the default does nothing.
pub type Notifier = fn(&str);

fn no_notify(_: &str) {}

/// A daemon whose sockets are bound: drivers may connect as soon as this exists.
pub struct Daemon {
    cfg: Arc<Config>,
    ingest: std::os::unix::net::UnixListener,
    control: std::os::unix::net::UnixListener,
    sockets: Vec<(PathBuf, u64)>,
    requests_tx: mpsc::UnboundedSender<Request>,
    requests: mpsc::UnboundedReceiver<Request>,
    notify: Notifier,
    watchdog: Option<Duration>,
    /// `data_root`, opened and `flock`ed for as long as the daemon runs (see [`lock_data_root`]).
    data_lock: std::fs::File,
    /// The dashboard's listener (config `http_listen`).
    http: Option<std::net::TcpListener>,
}

/// Runs a daemon with `config` until `shutdown` completes (see [`Daemon::run`]).
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<()> {
    Daemon::bind(config)?.run(shutdown).await
}

impl Daemon {
    /// Creates `data_root`, binds both sockets (mode, group, stale-socket rules in
    /// [`sockets`]) and the dashboard's listener.
    pub fn bind(config: Config) -> Result<Daemon> {
        roverlog_core::format::meta::create_dir_all_durable(&config.recording.data_root)?;
        let data_lock = lock_data_root(&config.recording.data_root)?;
        // Before the sockets: a taken port must not leave them behind.
        let http = http::bind(&config.http)?;
        let mode = config.sockets.mode;
        let gid = config
            .sockets
            .group
            .as_deref()
            .map(sockets::resolve_group)
            .transpose()?;
        let ingest = sockets::bind(&config.sockets.ingest, mode, gid)?;
        let control = sockets::bind(&config.sockets.control, mode, gid)?;
        let socks = vec![
            (
                config.sockets.ingest.clone(),
                sockets::inode(&config.sockets.ingest),
            ),
            (
                config.sockets.control.clone(),
                sockets::inode(&config.sockets.control),
            ),
        ];
        let (requests_tx, requests) = mpsc::unbounded_channel();
        Ok(Daemon {
            cfg: Arc::new(config),
            ingest,
            control,
            sockets: socks,
            requests_tx,
            requests,
            notify: no_notify,
            watchdog: None,
            data_lock,
            http,
        })
    }

    /// A sender of [`Request`]s, usable from any thread (a signal handler thread).
    pub fn requests(&self) -> mpsc::UnboundedSender<Request> {
        self.requests_tx.clone()
    }

    /// Sets the service-manager notifier.
    pub fn set_notifier(&mut self, notify: Notifier) {
        self.notify = notify;
    }

    /// Enables the service manager's watchdog with its timeout (see
    /// [`notify::watchdog_interval`]): `WATCHDOG=1` is sent every half of `timeout`, and only
    /// while every writer thread has proved progress within `timeout`, so a writer stuck in a
    /// write or fsync gets the daemon restarted.
    pub fn set_watchdog(&mut self, timeout: Option<Duration>) {
        self.watchdog = timeout.filter(|t| !t.is_zero());
    }

    /// Records until `shutdown` completes, then drains: connections stop reading (after what
    /// the drivers already sent), every queue is written, every writer finishes (fsync).
    /// Returns an error when that does not finish within `shutdown_deadline_ms`.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let Daemon {
            cfg,
            ingest,
            control,
            sockets: socks,
            requests_tx,
            mut requests,
            notify,
            watchdog,
            data_lock: _data_lock,
            http,
        } = self;
        drop(requests_tx);
        let (notice_tx, mut notices) = mpsc::unbounded_channel();
        let rec = Arc::new(Recorder::new(cfg.clone(), notice_tx, watchdog)?);
        rec.set_disk_free(disk::free_bytes(&cfg.recording.data_root).ok());

        let unfinished = recover_extending_start(&cfg, &notify).await?;
        if cfg.recording.autostart {
            let r = match (&unfinished, rec.disk_low()) {
                (_, Some(why)) => {
                    // Shown in status like a stop by the guard later on.
                    rec.stop_for(why.clone()).await;
                    Err(command::Refusal::DiskLow(why))
                }
                (Some(dir), None) if cfg.recording.resume_unfinished => rec.resume(dir).await,
                _ => rec.start(cfg.recording.label.as_deref(), "autostart").await,
            };
            if let Err(why) = r {
                tracing::error!("autostart failed: {why}");
                // status and STATUS= say why nothing is recorded, not just the log.
                rec.note_not_recording(format!("autostart failed: {why}"));
            }
        }

        // After the recovery: the traces a crash cut are sealed now, and may go.
        let offloader = match &cfg.offload {
            Some(o) => {
                let root = cfg.recording.data_root.clone();
                // Weak: the recorder holds the job's handle.
                let r = Arc::downgrade(&rec);
                let recording =
                    Box::new(move || r.upgrade().is_some_and(|r| r.current().is_some()));
                let o = offload::Offloader::start(o, root, recording)
                    .map_err(|e| Error::io(&cfg.recording.data_root, e))?;
                rec.set_offload(o.clone());
                Some(o)
            }
            None => None,
        };

        let (trigger, shut) = shutdown::channel();
        let max_conns = cfg.ingest.max_sensors + 16;
        let conns = Arc::new(tokio::sync::Semaphore::new(max_conns));
        let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
        let ingest = tokio::net::UnixListener::from_std(ingest)
            .map_err(|e| Error::io(&cfg.sockets.ingest, e))?;
        let control = tokio::net::UnixListener::from_std(control)
            .map_err(|e| Error::io(&cfg.sockets.control, e))?;
        tokio::spawn(ingest::accept_loop(
            ingest,
            rec.clone(),
            shut.clone(),
            conns,
            done_tx,
        ));
        tokio::spawn(control::accept_loop(control, rec.clone(), shut.clone()));
        let watched = rec.clone();
        tokio::spawn(health::run(
            cfg.clone(),
            rec.alarms().clone(),
            move || watched.watch(),
            shut.clone(),
        ));
        if let Some(l) = http {
            tokio::spawn(http::serve(l, rec.clone(), shut.clone()));
        }
        if let Some(hub) = rec.live() {
            let addr = hub.serve().await?;
            tracing::info!(url = %format!("ws://{addr}"), "live Foxglove feed listening");
            netns::warn_if_isolated("live Foxglove feed", addr);
        }
        tracing::info!(
            ingest = %cfg.sockets.ingest.display(),
            control = %cfg.sockets.control.display(),
            data = %cfg.recording.data_root.display(),
            "roverlog daemon ready"
        );
        notify("READY=1");

        let mut stats_tick = tokio::time::interval(cfg.recording.stats_interval);
        let mut disk_tick = tokio::time::interval(cfg.recording.disk_check_interval);
        let mut rotate_tick = tokio::time::interval(Duration::from_secs(1));
        let mut wd = Watchdog::new(watchdog);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                Some(req) = requests.recv() => match req {
                    Request::Rotate => {
                        let r = rec.clone();
                        let op = async move {
                            match r.rotate("SIGHUP", None).await {
                                Ok(s) => tracing::info!(trace = %s.trace, "rotated (SIGHUP)"),
                                Err(e) => tracing::info!("rotate (SIGHUP): {e}"),
                            }
                        };
                        if !wd.serving(&rec, notify, &mut shutdown, op).await {
                            break;
                        }
                    }
                },
                Some(n) = notices.recv() => match n {
                    WriterNotice::DiskError { fault, error } => {
                        // Several writers of one trace may report; a late report must not
                        // stop a trace started since.
                        let trace = fault.trace.clone();
                        if rec.current_dir().as_deref() != Some(trace.as_path()) {
                            tracing::warn!("{fault} (trace {} already closed)", trace.display());
                            continue;
                        }
                        let why = if fault.is_full() {
                            Some(format!("disk full (sensor {}: {error})", fault.sensor))
                        } else {
                            probe_disk(&trace, disk_fault::probe).await.err().map(|p| format!("disk error ({fault}; {p})"))
                        };
                        match why {
                            Some(why) => {
                                let r = rec.clone();
                                let op = async move { r.stop_for(why).await };
                                if !wd.serving(&rec, notify, &mut shutdown, op).await {
                                    break;
                                }
                            }
                            None => tracing::warn!("{fault}; {} still takes writes: the other sensors go on recording", trace.display()),
                        }
                    }
                },
                _ = stats_tick.tick() => {
                    notify(&status_line(&rec, log_stats(&rec)));
                }
                _ = wd.tick.tick(), if wd.bound.is_some() => wd.check(&rec, notify),
                _ = disk_tick.tick() => {
                    let free = disk::free_bytes(&cfg.recording.data_root).ok();
                    rec.set_disk_free(free);
                    if let Some(why) = rec.disk_low() {
                        if rec.current().is_some() {
                            let r = rec.clone();
                            let op = async move { r.stop_for(why).await };
                            if !wd.serving(&rec, notify, &mut shutdown, op).await {
                                break;
                            }
                        }
                    } else if rec.awaits_disk()
                        && free.is_none_or(|f| f >= cfg.recording.resume_free_bytes)
                        && probe_disk(&cfg.recording.data_root, disk_fault::probe).await.is_ok()
                    {
                        let r = rec.clone();
                        let label = cfg.recording.label.clone();
                        let op = async move {
                            match r.start(label.as_deref(), "disk usable again").await {
                                Ok(s) => tracing::warn!(trace = %s.trace, "the disk is usable again: recording"),
                                Err(e) => tracing::warn!("the disk is usable again, but start failed: {e}"),
                            }
                        };
                        if !wd.serving(&rec, notify, &mut shutdown, op).await {
                            break;
                        }
                    }
                }
                _ = rotate_tick.tick(), if cfg.rotation.is_on() => {
                    if let Some((age, bytes)) = rec.trace_size() {
                        let by_size = cfg.rotation.bytes.is_some_and(|b| bytes >= b);
                        let by_age = cfg.rotation.age.is_some_and(|a| age >= a);
                        if by_size || by_age {
                            let why = if by_size { "rotate_bytes" } else { "rotate_seconds" };
                            let r = rec.clone();
                            let op = async move {
                                if let Err(e) = r.rotate(why, None).await {
                                    tracing::warn!("rotate ({why}): {e}");
                                }
                            };
                            if !wd.serving(&rec, notify, &mut shutdown, op).await {
                                break;
                            }
                        }
                    }
                }
            }
        }

        notify("STOPPING=1");
        tracing::info!("shutting down: draining connections and queues");
        trigger.trigger();
        if let Some(o) = &offloader {
            o.request_stop();
        }
        let shutdown_began = std::time::Instant::now();
        let deadline = cfg.recording.shutdown_deadline;
        let drained = tokio::time::timeout(deadline, async {
            // Every connection task holds a clone of `done_tx`: recv() returns None when the
            // last one ended.
            let _ = done_rx.recv().await;
            let _ = rec.stop("shutdown").await;
            let r = rec.clone();
            let _ = tokio::task::spawn_blocking(move || r.join_writers()).await;
        })
        .await;
        if let Some(o) = offloader {
            // Its part in flight finishes or fails within the deadline; else it is left to
            // the exit (the journal keeps what was done, the next start goes on).
            // What the deadline has left after the drain, and at least a second.
            let bound = deadline
                .saturating_sub(shutdown_began.elapsed())
                .max(Duration::from_secs(1));
            let stopped = tokio::task::spawn_blocking(move || o.stop(bound)).await;
            if !matches!(stopped, Ok(true)) {
                tracing::warn!(
                    "offload did not stop within the shutdown deadline; left to the exit"
                );
            }
        }
        for (path, ino) in &socks {
            sockets::remove_if_ours(path, *ino);
        }
        match drained {
            Ok(()) if rec.faults().seen() => {
                let faults = rec.faults().all();
                tracing::error!("stopped after disk errors: {faults:?}");
                Err(Error::DiskFailed {
                    first: faults.first().cloned().map(Box::new),
                })
            }
            Ok(()) => {
                tracing::info!("stopped cleanly");
                Ok(())
            }
            Err(_) => Err(Error::ShutdownDeadline {
                deadline_ms: cfg.recording.shutdown_deadline.as_millis() as u64,
            }),
        }
    }
}

/// How long [`probe_disk`] waits for the disk to answer.
const PROBE_BOUND: Duration = Duration::from_secs(2);

/// Why [`probe_disk`] found the data disk not taking writes.
#[derive(Debug, thiserror::Error)]
enum ProbeFailed {
    /// The probe ran and a step of it failed.
    #[error(transparent)]
    Refused(#[from] disk_fault::ProbeError),
    /// The blocking thread that ran the probe panicked or was cancelled.
    #[error("probe of {}: {source}", dir.display())]
    Thread {
        dir: std::path::PathBuf,
        source: tokio::task::JoinError,
    },
    /// The disk did not answer in time (it counts as failed).
    #[error("probe of {}: no answer within {bound:?}", dir.display())]
    NoAnswer {
        dir: std::path::PathBuf,
        bound: Duration,
    },
}

/// Whether `dir` takes a write now (`probe`, one of [`disk_fault`]'s, on a blocking thread,
/// at most [`PROBE_BOUND`]: a disk that does not answer in time counts as failed).
async fn probe_disk(
    dir: &std::path::Path,
    probe: fn(&std::path::Path) -> std::result::Result<(), disk_fault::ProbeError>,
) -> std::result::Result<(), ProbeFailed> {
    let d = dir.to_path_buf();
    match tokio::time::timeout(PROBE_BOUND, tokio::task::spawn_blocking(move || probe(&d))).await {
        Ok(Ok(r)) => Ok(r?),
        Ok(Err(source)) => Err(ProbeFailed::Thread {
            dir: dir.to_path_buf(),
            source,
        }),
        Err(_) => Err(ProbeFailed::NoAnswer {
            dir: dir.to_path_buf(),
            bound: PROBE_BOUND,
        }),
    }
}

/// Takes an exclusive `flock` on the `data_root` directory itself (no lock file: a read-only
/// data_root still starts and says why it cannot record). A second daemon on the same
/// data_root, whatever its sockets, would take the live trace for a crashed one and cut and
/// record into its files: it is refused like one on the same sockets.
fn lock_data_root(root: &std::path::Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let dir = std::fs::File::open(root).map_err(|e| Error::io(root, e))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(Error::InUse {
                path: root.to_path_buf(),
                holds: "recording into this data_root (it holds its lock)",
            });
        }
        return Err(Error::io(root, e));
    }
    Ok(dir)
}

/// The watchdog pings of the main loop: `WATCHDOG=1` every half of `bound`, and only while
/// every writer has proved progress within `bound`.
struct Watchdog {
    bound: Option<Duration>,
    tick: tokio::time::Interval,
    withheld: bool,
}

impl Watchdog {
    fn new(bound: Option<Duration>) -> Watchdog {
        // Without a watchdog the tick is never awaited; the period only has to be valid.
        let tick = tokio::time::interval(bound.map_or(Duration::from_secs(3600), |w| w / 2));
        Watchdog {
            bound,
            tick,
            withheld: false,
        }
    }

    /// One tick: pings unless a writer is stalled.
    fn check(&mut self, rec: &Recorder, notify: Notifier) {
        let Some(bound) = self.bound else { return };
        let stalled = rec.stalled_writers(bound);
        if stalled.is_empty() {
            if self.withheld {
                tracing::info!("every writer makes progress again: watchdog pings resume");
                self.withheld = false;
            }
            notify(notify::WATCHDOG);
        } else if !self.withheld {
            // systemd restarts us unless the writer recovers within the timeout.
            tracing::error!(?stalled, "writer(s) made no progress for over {bound:?} (stuck in I/O?): withholding the watchdog ping");
            self.withheld = true;
        }
    }

    /// Runs `op` (a rotation or stop, which waits for every writer's backlog: longer than
    /// the watchdog timeout on a slow disk) while still pinging as long as the writers make
    /// progress. Returns false when `shutdown` completed first: `op` goes on in its own task
    /// (the drain waits for it, within the shutdown deadline).
    async fn serving(
        &mut self,
        rec: &Recorder,
        notify: Notifier,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
        op: impl Future<Output = ()> + Send + 'static,
    ) -> bool {
        let mut op = tokio::spawn(op);
        loop {
            tokio::select! {
                r = &mut op => {
                    if let Err(e) = r {
                        tracing::error!("rotation or stop ended abnormally: {e}");
                    }
                    return true;
                }
                _ = &mut *shutdown => return false,
                _ = self.tick.tick(), if self.bound.is_some() => self.check(rec, notify),
            }
        }
    }
}

/// How much more start-up time each `EXTEND_TIMEOUT_USEC=` asks for; sent every third of it.
const START_EXTENSION: Duration = Duration::from_secs(30);

/// Start-up recovery of unfinished traces (which may read and cut large files) on a blocking
/// thread, telling the service manager to extend the start timeout while it runs: a long
/// recovery must not make systemd kill the daemon before it is ready.
async fn recover_extending_start(cfg: &Config, notify: &impl Fn(&str)) -> Result<Option<PathBuf>> {
    let root = cfg.recording.data_root.clone();
    let delay = cfg.test_knobs.recovery_delay;
    let mut job = tokio::task::spawn_blocking(move || {
        std::thread::sleep(delay);
        recording::recover_unfinished(&root)
    });
    let extend = || {
        notify(&format!(
            "EXTEND_TIMEOUT_USEC={}",
            START_EXTENSION.as_micros()
        ))
    };
    extend();
    loop {
        tokio::select! {
            r = &mut job => {
                let found = r.map_err(|e| Error::Task { what: "start-up recovery", error: Box::new(e) })?;
                return Ok(found?);
            }
            _ = tokio::time::sleep(START_EXTENSION / 3) => extend(),
        }
    }
}

/// Totals over every sensor at one stats tick, for the `STATUS=` line.
#[derive(Default)]
struct Totals {
    sensors: usize,
    connected: usize,
    rate_hz: f64,
    drops: u64,
    failed: usize,
}

/// The `STATUS=` line shown by `systemctl status`.
fn status_line(rec: &Recorder, t: Totals) -> String {
    let state = match (rec.current(), rec.stopped_reason()) {
        (Some((trace, _)), _) => format!("recording {trace}"),
        (None, Some(why)) => format!("not recording ({why})"),
        (None, None) => "not recording".to_string(),
    };
    let alarms: Vec<String> = rec
        .alarms()
        .all()
        .iter()
        .map(|a| format!("{} {}", a.alarm, a.sensor).trim().to_string())
        .collect();
    let alarms = match alarms.len() {
        0 => String::new(),
        n => format!("ALARM ({n}): {}; ", alarms.join(", ")),
    };
    format!(
        "STATUS={alarms}{state}: {} sensor(s), {} connected, {:.1} samples/s, {} dropped, {} failed",
        t.sensors, t.connected, t.rate_hz, t.drops, t.failed
    )
}

/// One log line per sensor; returns the totals.
fn log_stats(rec: &Recorder) -> Totals {
    let mut t = Totals::default();
    for s in rec.slots() {
        let rate = s.stats.update_rate();
        let st = &s.stats;
        tracing::info!(
            sensor = %s.name,
            samples = st.samples.load(Relaxed),
            rate_hz = format!("{rate:.1}"),
            queue = s.queue_fill(),
            queue_high_water = st.queue_high_water.load(Relaxed),
            drops = st.drops.load(Relaxed),
            gaps = st.gaps.load(Relaxed),
            durable = st.durable.load(Relaxed),
            failed = st.failure().map(|f| f.to_string()).unwrap_or_default(),
            "stats"
        );
        t.sensors += 1;
        t.connected += usize::from(st.connected.load(Relaxed));
        t.rate_hz += rate;
        t.drops += st.drops.load(Relaxed);
        t.failed += usize::from(st.failure().is_some());
    }
    t
}
