//! When `lzmaf` compression falls behind: the rule that stores a frame
//! uncompressed instead (`format::stored_xz`, the same `.xz` framing), and their count in
//! `status` (`lzmaf_stored`) and `events.jsonl` (`lzmaf_stored` events).
//!
//! The rule (config `lzmaf_store_above`): before sending a frame to the compression pool the
//! writer looks at its sensor's queue: the bytes waiting *behind* the batch in hand, which
//! include its earlier frames still in the pool (a frame's queue permits go back when it is
//! appended). When that is more than the fraction of the queue's byte budget, compressing
//! would let the backlog grow towards a full queue (where the driver is stalled or frames are dropped), so
//! the frame is stored. Storing costs a copy and a CRC, so the backlog drains at the disk's
//! speed, and compression resumes by itself as soon as it is back under the bound.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::super::events::{Event, EventLog};
use super::super::stats::SensorStats;

/// An `lzmaf_stored` event is written at least this often during a long run of stored frames.
const EVENT_EVERY: Duration = Duration::from_secs(10);

/// One sensor's fallback state.
pub(super) struct StoreFallback {
    /// `lzmaf_store_above`: a fraction of the queue's budget, in (0, 1].
    above: f64,
    /// Stored frames not yet reported in an event.
    unreported: u64,
    last_event: Instant,
}

impl StoreFallback {
    pub(super) fn new(above: f64) -> StoreFallback {
        StoreFallback {
            above,
            unreported: 0,
            last_event: Instant::now(),
        }
    }

    /// Whether the next frame is to be stored uncompressed: `queued` bytes wait in the
    /// sensor's queue (its frames in the compression pool among them), `in_hand` of them
    /// belong to the batch being written.
    pub(super) fn behind(&self, queued: u64, in_hand: u64, limit: u64) -> bool {
        let waiting = queued.saturating_sub(in_hand);
        waiting as f64 > self.above * limit as f64
    }

    /// Counts `frames` samples whose `lzmaf` channels were stored (appended): in `status` at
    /// once, in an event when the run ends or every [`EVENT_EVERY`].
    pub(super) fn stored(
        &mut self,
        frames: u64,
        stats: &SensorStats,
        events: &EventLog,
        sensor: &str,
    ) {
        if frames == 0 {
            return;
        }
        stats.lzmaf_stored.fetch_add(frames, Relaxed);
        self.unreported += frames;
        if self.last_event.elapsed() >= EVENT_EVERY {
            self.report(events, sensor);
        }
    }

    /// A group was compressed again (or the trace closes): the run's frames go to the log.
    pub(super) fn report(&mut self, events: &EventLog, sensor: &str) {
        if self.unreported > 0 {
            tracing::warn!(
                sensor,
                frames = self.unreported,
                "lzmaf compression fell behind: frames stored uncompressed (`roverlog compact` recompresses them)"
            );
            events.write(Event::LzmafStored {
                sensor: sensor.to_string(),
                frames: self.unreported,
            });
            self.unreported = 0;
        }
        self.last_event = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_only_when_more_than_the_fraction_waits_behind_the_batch_in_hand() {
        let f = StoreFallback::new(0.5);
        assert!(!f.behind(0, 0, 1000));
        assert!(
            !f.behind(500, 0, 1000),
            "exactly half is not more than half"
        );
        assert!(f.behind(501, 0, 1000));
        // The batch being written does not count: it is not waiting.
        assert!(!f.behind(900, 400, 1000));
        assert!(f.behind(900, 399, 1000));
        // 1 means never: the queue cannot hold more than its budget.
        assert!(!StoreFallback::new(1.0).behind(1000, 0, 1000));
    }

    #[test]
    fn counts_at_once_and_reports_each_run_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        let stats = SensorStats::new(1000);
        let mut f = StoreFallback::new(0.5);
        f.stored(3, &stats, &log, "lidar");
        f.stored(2, &stats, &log, "lidar");
        assert_eq!(stats.lzmaf_stored.load(Relaxed), 5);
        f.report(&log, "lidar");
        f.report(&log, "lidar"); // nothing new: no second event
        f.stored(1, &stats, &log, "lidar");
        f.last_event -= EVENT_EVERY; // a long run: reported without waiting for its end
        f.stored(1, &stats, &log, "lidar");
        let events = roverlog_core::format::events::read_events(dir.path()).unwrap();
        let frames: Vec<u64> = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::LzmafStored { sensor, frames } if sensor == "lidar" => Some(*frames),
                _ => None,
            })
            .collect();
        assert_eq!(frames, [5, 2]);
        assert_eq!(stats.lzmaf_stored.load(Relaxed), 7);
    }
}
