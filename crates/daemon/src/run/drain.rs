//! The end of a run: connections stop reading (after what the drivers already sent), every
//! queue is written, every writer finishes (fsync), the offloader stops, the sockets go; then
//! the verdict the exit code carries (clean, disk errors met, or the deadline passed).

use std::time::{Duration, Instant};

use super::Running;
use crate::error::{Error, Result};
use crate::sockets;

impl Running {
    /// Drains within `shutdown_deadline_ms`; an error when that does not finish in time or
    /// when a write or fsync failed during the run.
    pub(crate) async fn drain(mut self) -> Result<()> {
        (self.notify)("STOPPING=1");
        tracing::info!("shutting down: draining connections and queues");
        self.trigger.trigger();
        if let Some(o) = &self.offloader {
            o.request_stop();
        }
        let began = Instant::now();
        let deadline = self.cfg.recording.shutdown_deadline;
        let rec = self.rec.clone();
        let conns_done = &mut self.conns_done;
        let drained = tokio::time::timeout(deadline, async {
            // Every connection task holds a clone of the sender: recv() returns None when
            // the last one ended.
            let _ = conns_done.recv().await;
            let _ = rec.stop("shutdown").await;
            let r = rec.clone();
            let _ = tokio::task::spawn_blocking(move || r.join_writers()).await;
        })
        .await;
        if let Some(o) = self.offloader.take() {
            // Its part in flight finishes or fails within the deadline; else it is left to
            // the exit (the journal keeps what was done, the next start goes on).
            // What the deadline has left after the drain, and at least a second.
            let bound = deadline
                .saturating_sub(began.elapsed())
                .max(Duration::from_secs(1));
            let stopped = tokio::task::spawn_blocking(move || o.stop(bound)).await;
            if !matches!(stopped, Ok(true)) {
                tracing::warn!(
                    "offload did not stop within the shutdown deadline; left to the exit"
                );
            }
        }
        for (path, ino) in &self.sockets {
            sockets::remove_if_ours(path, *ino);
        }
        match drained {
            Ok(()) if self.rec.faults().seen() => {
                let faults = self.rec.faults().all();
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
                deadline_ms: deadline.as_millis() as u64,
            }),
        }
    }
}
