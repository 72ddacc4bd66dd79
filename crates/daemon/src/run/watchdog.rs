//! The service manager's watchdog as the main loop serves it: `WATCHDOG=1` every half of the
//! timeout, and only while every writer thread has proved progress within it, so a writer
//! stuck in a write or fsync gets the daemon restarted.

use std::future::Future;
use std::time::Duration;

use crate::recording::Recorder;
use crate::{notify, Notifier};

/// The watchdog pings of the main loop: `WATCHDOG=1` every half of `bound`, and only while
/// every writer has proved progress within `bound`.
pub(super) struct Watchdog {
    pub(super) bound: Option<Duration>,
    pub(super) tick: tokio::time::Interval,
    withheld: bool,
}

impl Watchdog {
    pub(super) fn new(bound: Option<Duration>) -> Watchdog {
        // Without a watchdog the tick is never awaited; the period only has to be valid.
        let tick = tokio::time::interval(bound.map_or(Duration::from_secs(3600), |w| w / 2));
        Watchdog {
            bound,
            tick,
            withheld: false,
        }
    }

    /// One tick: pings unless a writer is stalled.
    pub(super) fn check(&mut self, rec: &Recorder, notify: Notifier) {
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
    pub(super) async fn serving(
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
