//! The main loop of a running daemon, one handler per thing it waits for: a request
//! (SIGHUP), a writer's notice (a disk error), the stats tick (`STATUS=` and the log), the
//! watchdog tick, the disk guard's tick (stop when low, start again when usable) and the
//! rotation tick. A handler that has to stop, start or rotate returns that operation: the
//! loop runs it through [`Watchdog::serving`](super::watchdog::Watchdog::serving), which keeps pinging meanwhile.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use super::status_line::{log_stats, status_line};
use super::Running;
use crate::writer::WriterNotice;
use crate::{disk, disk_fault, Request};

/// A stop, start or rotation the loop runs while it keeps pinging the watchdog.
type Op = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

impl Running {
    /// Records until `shutdown` completes (or completes during an operation).
    pub(crate) async fn tick(&mut self, shutdown: &mut (impl Future<Output = ()> + Unpin)) {
        let mut stats_tick = tokio::time::interval(self.cfg.recording.stats_interval);
        let mut disk_tick = tokio::time::interval(self.cfg.recording.disk_check_interval);
        let mut rotate_tick = tokio::time::interval(Duration::from_secs(1));
        let rotation = self.cfg.rotation.is_on();
        let watchdog = self.wd.bound.is_some();
        loop {
            let op = tokio::select! {
                _ = &mut *shutdown => return,
                Some(req) = self.requests.recv() => Some(self.on_request(req)),
                Some(n) = self.notices.recv() => self.on_notice(n).await,
                _ = stats_tick.tick() => {
                    (self.notify)(&status_line(&self.rec, log_stats(&self.rec)));
                    None
                }
                _ = self.wd.tick.tick(), if watchdog => {
                    self.wd.check(&self.rec, self.notify);
                    None
                }
                _ = disk_tick.tick() => self.on_disk_check().await,
                _ = rotate_tick.tick(), if rotation => self.on_rotate_check(),
            };
            if let Some(op) = op {
                if !self.wd.serving(&self.rec, self.notify, shutdown, op).await {
                    return;
                }
            }
        }
    }

    /// A request from outside the sockets.
    fn on_request(&self, req: Request) -> Op {
        match req {
            Request::Rotate => {
                let r = self.rec.clone();
                Box::pin(async move {
                    match r.rotate("SIGHUP", None).await {
                        Ok(s) => tracing::info!(trace = %s.trace, "rotated (SIGHUP)"),
                        Err(e) => tracing::info!("rotate (SIGHUP): {e}"),
                    }
                })
            }
        }
    }

    /// A writer's disk error: a full disk, or a data root that no longer takes a write,
    /// stops the recording; otherwise the other sensors go on.
    async fn on_notice(&self, n: WriterNotice) -> Option<Op> {
        let WriterNotice::DiskError { fault, error } = n;
        // Several writers of one trace may report; a late report must not stop a trace
        // started since.
        let trace = fault.trace.clone();
        if self.rec.current_dir().as_deref() != Some(trace.as_path()) {
            tracing::warn!("{fault} (trace {} already closed)", trace.display());
            return None;
        }
        let why = if fault.is_full() {
            Some(format!("disk full (sensor {}: {error})", fault.sensor))
        } else {
            probe_disk(&trace, disk_fault::probe)
                .await
                .err()
                .map(|p| format!("disk error ({fault}; {p})"))
        };
        match why {
            Some(why) => {
                let r = self.rec.clone();
                Some(Box::pin(async move { r.stop_for(why).await }))
            }
            None => {
                tracing::warn!(
                    "{fault}; {} still takes writes: the other sensors go on recording",
                    trace.display()
                );
                None
            }
        }
    }

    /// The disk guard: stops recording when the free space is low; starts again once the
    /// disk has room (`resume_free_bytes`) and takes a write after the guard or an error
    /// stopped it.
    async fn on_disk_check(&self) -> Option<Op> {
        let cfg = &self.cfg.recording;
        let free = disk::free_bytes(&cfg.data_root).ok();
        self.rec.set_disk_free(free);
        if let Some(why) = self.rec.disk_low() {
            // Only a recording is stopped.
            self.rec.current()?;
            let r = self.rec.clone();
            return Some(Box::pin(async move { r.stop_for(why).await }));
        }
        let usable = self.rec.awaits_disk()
            && free.is_none_or(|f| f >= cfg.resume_free_bytes)
            && probe_disk(&cfg.data_root, disk_fault::probe).await.is_ok();
        if !usable {
            return None;
        }
        let r = self.rec.clone();
        let label = cfg.label.clone();
        Some(Box::pin(async move {
            match r.start(label.as_deref(), "disk usable again").await {
                Ok(s) => tracing::warn!(trace = %s.trace, "the disk is usable again: recording"),
                Err(e) => tracing::warn!("the disk is usable again, but start failed: {e}"),
            }
        }))
    }

    /// Config `rotate_bytes` / `rotate_seconds`: a rotation when the trace reached either.
    fn on_rotate_check(&self) -> Option<Op> {
        let rotation = &self.cfg.rotation;
        let (age, bytes) = self.rec.trace_size()?;
        let by_size = rotation.bytes.is_some_and(|b| bytes >= b);
        let by_age = rotation.age.is_some_and(|a| age >= a);
        if !(by_size || by_age) {
            return None;
        }
        let why = if by_size {
            "rotate_bytes"
        } else {
            "rotate_seconds"
        };
        let r = self.rec.clone();
        Some(Box::pin(async move {
            if let Err(e) = r.rotate(why, None).await {
                tracing::warn!("rotate ({why}): {e}");
            }
        }))
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
    dir: &Path,
    probe: fn(&Path) -> std::result::Result<(), disk_fault::ProbeError>,
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
