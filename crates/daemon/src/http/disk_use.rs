//! How fast the open trace takes disk space, and how long the free space lasts at that pace:
//! the dashboard's "time left".
//!
//! The pace is the growth of the space the trace's files occupy on disk (allocated blocks, so
//! every channel, `ts` and `ts_recv`, `meta.json`, `events.jsonl` and the filesystem's block
//! rounding are in it), over the last [`WINDOW`]; the free space it is measured against is
//! what is left above `min_free_bytes`, where the disk guard stops recording. Counting the
//! bytes drivers send instead misses the timestamps and the rounding (35 % optimistic on a
//! trace of small samples).
//!
//! Walking a trace of one file per sample (jpg, npz) costs more as it grows, so the walk runs
//! at most every [`WALK_EVERY`] and never takes more than a twentieth of the time.

use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The consumption rate is the growth over this long.
pub const WINDOW: Duration = Duration::from_secs(30);
/// Least time between two walks of the trace.
pub const WALK_EVERY: Duration = Duration::from_secs(1);
/// A rate needs readings at least this far apart.
const MIN_SPAN: Duration = Duration::from_secs(2);
/// Deepest directory level walked (`<trace>/<sensor>/<channel>/<sample file>`).
const MAX_DEPTH: usize = 4;

/// Bytes the files and directories under `dir` occupy on disk (their allocated 512-byte
/// blocks), `dir` included.
pub fn allocated_bytes(dir: &Path) -> std::io::Result<u64> {
    fn walk(dir: &Path, depth: usize) -> std::io::Result<u64> {
        let mut total = std::fs::symlink_metadata(dir)?.blocks() * 512;
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let ft = e.file_type()?;
            if ft.is_dir() && depth < MAX_DEPTH {
                // A directory removed while walked (a failed sensor's) counts nothing.
                total += walk(&e.path(), depth + 1).unwrap_or(0);
            } else if let Ok(m) = e.metadata() {
                total += m.blocks() * 512;
            }
        }
        Ok(total)
    }
    walk(dir, 1)
}

/// Seconds until the free space above `min_free_bytes` is gone at `bytes_per_s` (0 when it
/// already is; `None` when nothing is being consumed).
pub fn seconds_left(free_bytes: u64, min_free_bytes: u64, bytes_per_s: f64) -> Option<f64> {
    (bytes_per_s > 0.0).then(|| free_bytes.saturating_sub(min_free_bytes) as f64 / bytes_per_s)
}

/// The open trace's disk consumption over the last [`WINDOW`], across rotations.
#[derive(Default)]
pub struct Consumption {
    /// The trace last walked and its size then.
    last: Option<(PathBuf, u64)>,
    /// Bytes taken since recording started: each trace's growth, added up.
    consumed: u64,
    /// (when, `consumed`) readings within the window.
    readings: VecDeque<(Instant, u64)>,
    /// When the trace may be walked next.
    next_walk: Option<Instant>,
}

impl Consumption {
    /// Whether the trace is due for a walk at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.next_walk.is_none_or(|t| now >= t)
    }

    /// Adds a reading at `now`: `trace` is the open trace's directory and its
    /// [`allocated_bytes`] (`None` when nothing records, which forgets the readings), and
    /// `took` how long the walk took (the next waits at least twenty times that).
    pub fn add(&mut self, now: Instant, trace: Option<(PathBuf, u64)>, took: Duration) {
        self.next_walk = Some(now + WALK_EVERY.max(took * 20));
        let Some((dir, size)) = trace else {
            *self = Consumption {
                next_walk: self.next_walk,
                ..Consumption::default()
            };
            return;
        };
        // A new trace (a rotation) starts from nothing; a shrinking one (a failed sensor's
        // files removed) adds nothing.
        let before = match &self.last {
            Some((d, s)) if *d == dir => *s,
            _ => 0,
        };
        self.consumed += size.saturating_sub(before);
        self.last = Some((dir, size));
        self.readings.push_back((now, self.consumed));
        while self
            .readings
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > WINDOW)
        {
            self.readings.pop_front();
        }
    }

    /// Bytes a second taken over the window (`None` until readings span `MIN_SPAN`).
    pub fn bytes_per_s(&self) -> Option<f64> {
        let (t0, c0) = self.readings.front()?;
        let (t1, c1) = self.readings.back()?;
        let span = t1.duration_since(*t0);
        (span >= MIN_SPAN).then(|| (c1 - c0) as f64 / span.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_is_the_space_above_the_guard_over_the_pace_on_disk() {
        // 10 GB free, the guard at 2 GB, 4 MB/s on disk: 8e9 / 4e6 = 2000 s.
        assert_eq!(
            seconds_left(10_000_000_000, 2_000_000_000, 4e6),
            Some(2000.0)
        );
        // Below the guard already: nothing left.
        assert_eq!(seconds_left(1_000, 2_000, 10.0), Some(0.0));
        // Nothing written: no estimate.
        assert_eq!(seconds_left(1_000, 0, 0.0), None);
    }

    #[test]
    fn the_pace_spans_rotations_and_forgets_a_stop() {
        let t0 = Instant::now();
        let s = |i: u64| t0 + Duration::from_secs(i);
        let mut c = Consumption::default();
        c.add(s(0), Some(("a".into(), 8192)), Duration::ZERO);
        assert_eq!(c.bytes_per_s(), None, "one reading is no pace");
        c.add(s(1), Some(("a".into(), 8192 + 4096)), Duration::ZERO);
        assert_eq!(c.bytes_per_s(), None, "1 s is too short");
        c.add(s(2), Some(("a".into(), 8192 + 3 * 4096)), Duration::ZERO);
        // 3 blocks in 2 s.
        assert_eq!(c.bytes_per_s(), Some(6144.0));
        // Rotated: the new trace's 4096 bytes are new consumption, the old one's are kept.
        c.add(s(4), Some(("b".into(), 4096)), Duration::ZERO);
        assert_eq!(c.bytes_per_s(), Some(4096.0));
        // Readings older than the window fall out.
        c.add(s(40), Some(("b".into(), 4096 + 36 * 1000)), Duration::ZERO);
        c.add(s(42), Some(("b".into(), 4096 + 38 * 1000)), Duration::ZERO);
        assert_eq!(c.bytes_per_s(), Some(1000.0));
        // Stopped: no pace until two new readings.
        c.add(s(43), None, Duration::ZERO);
        assert_eq!(c.bytes_per_s(), None);
        c.add(s(44), Some(("c".into(), 100)), Duration::ZERO);
        assert_eq!(c.bytes_per_s(), None);
    }

    #[test]
    fn a_slow_walk_waits_longer() {
        let t0 = Instant::now();
        let mut c = Consumption::default();
        assert!(c.due(t0));
        c.add(t0, None, Duration::from_millis(200));
        assert!(!c.due(t0 + Duration::from_secs(3)));
        assert!(c.due(t0 + Duration::from_secs(4)));
    }

    #[test]
    fn allocated_bytes_count_every_file_in_whole_blocks() {
        let d = tempfile::tempdir().unwrap();
        let empty = allocated_bytes(d.path()).unwrap();
        std::fs::create_dir(d.path().join("imu")).unwrap();
        std::fs::write(d.path().join("imu/ts"), vec![1u8; 8 * 1000]).unwrap();
        std::fs::write(d.path().join("imu/ts_recv"), vec![1u8; 8 * 1000]).unwrap();
        std::fs::write(d.path().join("imu/meta.json"), b"{}").unwrap();
        let full = allocated_bytes(d.path()).unwrap();
        // Each file takes at least its length, in whole blocks.
        assert!(full - empty >= 2 * 8000, "{full} - {empty}");
        assert_eq!(full % 512, 0);
    }
}
