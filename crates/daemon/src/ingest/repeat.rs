//! A connection's side of `dedup` (docs/protocol.md 4.2): frames repeating a sequence number
//! the sensor already wrote in the open trace ([`SeqSeen`](crate::dedup::SeqSeen), kept in
//! its [`Slot`]) are dropped, counted in `status` (`repeats`) and written to the event log as
//! one `repeat` event per run.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::{Connection, Tally};
use crate::events::Event;
use crate::poison::LockExt;
use crate::recording::Slot;

/// A run of repeated frames, written as one event when it ends.
pub(super) struct RepeatRun {
    count: u64,
    first_frame: u64,
    first_seq: u64,
    last_seq: u64,
}

impl Connection {
    /// Whether frame `no` (`seq`, `ts`) repeats one `slot` wrote in `trace` (the open trace,
    /// by when it was opened). A repeat is counted and joins the current run; any other
    /// frame ends the run.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn repeat(
        &self,
        t: &mut Tally,
        sensor: &str,
        slot: &Slot,
        trace: Instant,
        no: u64,
        seq: u64,
        ts: f64,
    ) -> bool {
        if !slot.seen.lock_or_recover().is_repeat(trace, seq, ts) {
            self.end_repeats(t, sensor);
            return false;
        }
        slot.stats.repeats.fetch_add(1, Relaxed);
        let r = t.repeats.get_or_insert(RepeatRun {
            count: 0,
            first_frame: no,
            first_seq: seq,
            last_seq: seq,
        });
        r.count += 1;
        r.last_seq = seq;
        true
    }

    /// Writes the run of repeats, if one is open, to the event log.
    pub(super) fn end_repeats(&self, t: &mut Tally, sensor: &str) {
        if let Some(r) = t.repeats.take() {
            self.rec.event(Event::Repeat {
                sensor: sensor.to_string(),
                count: r.count,
                first_frame: r.first_frame,
                first_seq: r.first_seq,
                last_seq: r.last_seq,
            });
        }
    }
}
