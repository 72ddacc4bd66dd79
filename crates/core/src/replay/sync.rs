//! Nearest synchronisation, like upstream's `Nearest` synchroniser: for each sample of a
//! reference sensor, the index of the nearest sample (in time) of every other sensor and the
//! time offset, or `None` when the nearest one is further away than a tolerance.

/// One row: a reference sample and its nearest partners.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncRow {
    /// The reference sample's index.
    pub reference: u64,
    /// Per other sensor: `(index, offset_seconds)` of the nearest sample, offset =
    /// `ts_other - ts_reference`; `None` when no sample is within the tolerance.
    pub others: Vec<Option<(u64, f64)>>,
}

/// The nearest sample of `ts` (ascending) to `t`: `(index, offset)`. Ties go to the earlier.
fn nearest_one(ts: &[f64], t: f64) -> Option<(u64, f64)> {
    let i = ts.partition_point(|&x| x < t);
    let after = ts.get(i).map(|&x| (i, x - t));
    let before = i.checked_sub(1).map(|j| (j, ts[j] - t));
    let best = match (before, after) {
        (Some(b), Some(a)) => {
            if b.1.abs() <= a.1.abs() {
                b
            } else {
                a
            }
        }
        (b, a) => b.or(a)?,
    };
    Some((best.0 as u64, best.1))
}

/// Synchronises `others` (ascending timestamp lists) against `reference`: one row per
/// reference sample. A partner further than `tolerance` seconds counts as missing.
pub fn nearest(reference: &[f64], others: &[&[f64]], tolerance: f64) -> Vec<SyncRow> {
    reference
        .iter()
        .enumerate()
        .map(|(i, &t)| SyncRow {
            reference: i as u64,
            others: others
                .iter()
                .map(|ts| nearest_one(ts, t).filter(|(_, off)| off.abs() <= tolerance))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_with_gaps_and_tolerance() {
        let cam = [0.0, 0.1, 0.2, 0.3, 0.4];
        // The lidar misses samples around 0.2.
        let lidar = [0.01, 0.09, 0.33, 0.41];
        let imu: [f64; 0] = [];
        let rows = nearest(&cam, &[&lidar, &imu], 0.05);
        let l: Vec<_> = rows.iter().map(|r| r.others[0].map(|(i, _)| i)).collect();
        assert_eq!(l, [Some(0), Some(1), None, Some(2), Some(3)]);
        assert!(rows.iter().all(|r| r.others[1].is_none()));
        let (_, off) = rows[3].others[0].unwrap();
        assert!((off - 0.03).abs() < 1e-12);
        // Ties go to the earlier sample.
        let rows = nearest(&[1.0], &[&[0.5, 1.5]], 1.0);
        assert_eq!(rows[0].others[0], Some((0, -0.5)));
    }
}
