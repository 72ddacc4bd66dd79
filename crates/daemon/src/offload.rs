//! The background offload (config `offload`): the `roverlog offload` job
//! ([`roverlog_offload::run`], journalled, verified, resumable) run by the daemon on its own
//! `data_root`, in a thread of its own so that ingest never waits for it. The job never
//! sends the trace being recorded (the daemon's lock on `data_root` marks it, see
//! `roverlog_offload::select`).
//!
//! The thread runs the job every `interval_ms` (and retries after an error then), under
//! `when: "idle"` only while nothing is recorded: a recording that starts stops the job
//! before its next part. Its progress is [`OffloadStatus`], shown in `status` (`offload`)
//! and on the dashboard. At shutdown it is asked to stop before its next part and waited for
//! within what the shutdown deadline has left (at least 1 s); the journal lets the next run go on where it stopped.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::{Offload, OffloadWhen};
use crate::poison::LockExt;
use roverlog_offload::OffloadError;

/// The window `rate_bytes_per_s` is measured over.
const RATE_WINDOW: Duration = Duration::from_secs(10);

/// `status` `offload`.
#[derive(Debug, Clone, Serialize)]
pub struct OffloadStatus {
    pub dest: String,
    pub when: &'static str,
    /// `starting`, `sending`, `waiting` (for the next look, `interval_ms`), `paused`
    /// (recording, under `when: "idle"`), `stopped` (shutdown).
    pub state: &'static str,
    /// Sealed traces not yet verified at `dest` (`null` until the first look).
    pub pending_traces: Option<u64>,
    /// Their bytes not yet acknowledged by the store.
    pub bytes_left: Option<u64>,
    /// Bytes per second over the last 10 s.
    pub rate_bytes_per_s: f64,
    /// The trace being sent.
    pub current_trace: Option<String>,
    /// Bytes sent and traces verified since the daemon started.
    pub sent_bytes: u64,
    pub verified_traces: u64,
    /// The error that ended the last run (cleared by a run that finishes).
    pub last_error: Option<String>,
}

/// What the thread and `status` share.
struct Shared {
    stop: AtomicBool,
    status: Mutex<OffloadStatus>,
    /// (when, bytes) of the recent sends, for the rate.
    sends: Mutex<VecDeque<(Instant, u64)>>,
}

impl Shared {
    fn set(&self, f: impl FnOnce(&mut OffloadStatus)) {
        f(&mut self.status.lock_or_recover());
    }
}

/// A handle on the running job: its status, and its stop.
pub struct Offloader {
    shared: Arc<Shared>,
    done: crossbeam_channel::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl Offloader {
    /// Starts the job's thread on `data_root` with `cfg`; `recording` tells whether a trace is
    /// being recorded (the recorder, which shows this job's status, holds the handle).
    pub fn start(
        cfg: &Offload,
        data_root: PathBuf,
        recording: Box<dyn Fn() -> bool + Send>,
    ) -> std::io::Result<Arc<Offloader>> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            status: Mutex::new(OffloadStatus {
                dest: cfg.dest.clone(),
                when: match cfg.when {
                    OffloadWhen::Idle => "idle",
                    OffloadWhen::Always => "always",
                },
                state: "starting",
                pending_traces: None,
                bytes_left: None,
                rate_bytes_per_s: 0.0,
                current_trace: None,
                sent_bytes: 0,
                verified_traces: 0,
                last_error: None,
            }),
            sends: Mutex::new(VecDeque::new()),
        });
        let mut opts = roverlog_offload::Options::new(data_root, cfg.dest.clone());
        opts.delete = cfg.delete;
        opts.keep_free = cfg.keep_free;
        opts.rate = cfg.rate;
        let job = Job {
            shared: shared.clone(),
            opts,
            idle_only: cfg.when == OffloadWhen::Idle,
            interval: cfg.interval,
            recording,
        };
        let (tx, done) = crossbeam_channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name("offload".into())
            .spawn(move || {
                job.run();
                let _ = tx.send(());
            })?;
        Ok(Arc::new(Offloader {
            shared,
            done,
            thread: Some(thread),
        }))
    }

    /// The job's progress now.
    pub fn status(&self) -> OffloadStatus {
        let mut s = self.shared.status.lock_or_recover().clone();
        let mut sends = self.shared.sends.lock_or_recover();
        let now = Instant::now();
        while sends.front().is_some_and(|(t, _)| now - *t > RATE_WINDOW) {
            sends.pop_front();
        }
        let bytes: u64 = sends.iter().map(|(_, n)| n).sum();
        s.rate_bytes_per_s = (bytes as f64 / RATE_WINDOW.as_secs_f64()).round();
        s
    }

    /// Asks the job to stop before its next part (a part in flight finishes or fails).
    pub fn request_stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// Asks the job to stop and waits for it at most `bound`; false when it did not stop in
    /// time (it is left to the process's exit; the journal keeps what was done).
    pub fn stop(&self, bound: Duration) -> bool {
        self.request_stop();
        match self.done.recv_timeout(bound) {
            Ok(()) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => true,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => false,
        }
    }
}

impl Drop for Offloader {
    fn drop(&mut self) {
        self.request_stop();
        // Joined only when it already ended: a drop never waits for the store.
        if let Some(t) = self.thread.take() {
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// The thread's side.
struct Job {
    shared: Arc<Shared>,
    opts: roverlog_offload::Options,
    idle_only: bool,
    interval: Duration,
    recording: Box<dyn Fn() -> bool + Send>,
}

impl Job {
    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn recording(&self) -> bool {
        (self.recording)()
    }

    fn run(self) {
        while !self.stopping() {
            if self.idle_only && self.recording() {
                // What waits for the recording to stop is shown meanwhile.
                self.shared.set(|s| s.state = "paused");
                self.look();
            } else {
                self.once();
            }
            // The next look, or a stop, whichever comes first.
            let until = Instant::now() + self.interval;
            while !self.stopping() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100).min(self.interval));
            }
        }
        self.shared.set(|s| {
            s.state = "stopped";
            s.current_trace = None;
        });
    }

    /// One run of the job, with what is pending before and after.
    fn once(&self) {
        self.look();
        self.shared.set(|s| s.state = "sending");
        let r = roverlog_offload::run(&self.opts, self);
        match r {
            Ok(summary) => {
                for t in &summary.traces {
                    tracing::info!(trace = %t, dest = %self.opts.dest, "offloaded and verified");
                }
                self.shared.set(|s| {
                    s.verified_traces += summary.traces.len() as u64;
                    s.last_error = None;
                });
            }
            Err(OffloadError::Stopped) => {}
            Err(e) => {
                tracing::warn!("offload to {}: {e}", self.opts.dest);
                self.shared.set(|s| s.last_error = Some(e.to_string()));
            }
        }
        self.shared.set(|s| {
            s.current_trace = None;
            s.state = if self.stopping() {
                "stopped"
            } else {
                "waiting"
            };
        });
        self.look();
    }

    /// Counts what is pending (read-only; an error reading it is the last error).
    fn look(&self) {
        match roverlog_offload::pending::pending(&self.opts) {
            Ok(p) => self.shared.set(|s| {
                s.pending_traces = Some(p.traces);
                s.bytes_left = Some(p.bytes);
            }),
            Err(e) => self.shared.set(|s| s.last_error = Some(e.to_string())),
        }
    }
}

impl roverlog_offload::Progress for Job {
    fn trace(&self, name: &str, bytes: u64, done: u64) {
        self.shared.set(|s| {
            // The trace before this one is verified.
            if s.current_trace.is_some() {
                s.pending_traces = s.pending_traces.map(|n| n.saturating_sub(1));
            }
            s.current_trace = Some(name.to_string());
            // A trace sealed after the last look (between it and the run's listing) was not
            // counted: what is left is at least this one.
            s.pending_traces = Some(s.pending_traces.unwrap_or(0).max(1));
            s.bytes_left = Some(s.bytes_left.unwrap_or(0).max(bytes.saturating_sub(done)));
        });
    }

    fn sent(&self, n: u64) {
        self.shared.set(|s| {
            s.sent_bytes += n;
            s.bytes_left = s.bytes_left.map(|b| b.saturating_sub(n));
        });
        self.shared
            .sends
            .lock_or_recover()
            .push_back((Instant::now(), n));
    }

    fn note(&self, line: &str) {
        tracing::debug!("offload: {line}");
    }

    fn stopped(&self) -> bool {
        self.stopping() || (self.idle_only && self.recording())
    }
}
