//! `trigger` (snapshot mode): a trace that begins with the pre-trigger ring and stops by
//! itself `after` the trigger. It drives the recorder (start, stop), so it lives here; the
//! ring and the memory of the last trigger are `snapshot`'s, given to the recorder.

use std::sync::Arc;
use std::time::Duration;

use super::Recorder;
use crate::command::{Refusal, Triggered};

impl Recorder {
    /// Opens a trace that begins with what the ring holds (the last `pre_trigger_seconds`)
    /// and stops it `after` from now, back to keeping the ring. A trigger while its trace is
    /// still recording moves the stop to `after` from the new trigger.
    pub async fn trigger(
        self: &Arc<Self>,
        label: Option<&str>,
        after: Duration,
    ) -> Result<Triggered, Refusal> {
        if !self.snapshot_ring().is_some_and(|r| r.enabled()) {
            return Err(Refusal::NoSnapshotMode);
        }
        let stop_at = || std::time::Instant::now() + after;
        let (done, mine) = match self.current() {
            Some((trace, _)) => match self.triggers.extend(&trace, stop_at()) {
                Some(n) => (
                    Triggered {
                        trace,
                        dir: None,
                        extended: true,
                        after_s: after.as_secs_f64(),
                    },
                    n,
                ),
                None => return Err(Refusal::NotTriggered { trace }),
            },
            None => {
                let started = self.start(label, "trigger").await?;
                let n = self.triggers.started(started.trace.clone(), stop_at());
                (
                    Triggered {
                        trace: started.trace,
                        dir: Some(started.dir),
                        extended: false,
                        after_s: after.as_secs_f64(),
                    },
                    n,
                )
            }
        };
        let rec = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let current = rec.current().map(|(n, _)| n);
            // Not when a later trigger moved the stop, or the triggered trace (or the part a
            // rotation continued it in) is no longer the one recording.
            if rec.triggers.still(mine, current.as_deref()) {
                let _ = rec.stop("trigger_after").await;
            }
        });
        Ok(done)
    }
}
