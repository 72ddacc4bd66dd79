//! A sensor's sample rate over time, as the timeline draws it.
//!
//! The bins follow the trace's length and the sensor's own rate: a bin is one pixel column
//! of the plot, or five of the sensor's median periods if that is longer, so every bin holds
//! several samples. A bin's rate is its samples' own spacing, `(n - 1) / (last - first)`,
//! not `n / width`: counting samples per bin makes a steady sensor a zigzag (a bin holds 4 or
//! 5 samples of a 10 Hz sensor by where the edges fall). A bin with fewer than two samples has
//! no rate: the line breaks there instead of drawing a diagonal across the gap.

/// Bins of one width from the trace's start; `values[k]` covers `[k * width, (k + 1) * width)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSeries {
    pub width: f64,
    pub values: Vec<Option<f64>>,
}

impl RateSeries {
    /// The largest rate of any bin (0 without one).
    pub fn max(&self) -> f64 {
        self.values.iter().flatten().copied().fold(0.0, f64::max)
    }
}

/// The median spacing of `ts` (0 with fewer than two samples).
pub fn median_period(ts: &[f64]) -> f64 {
    let mut d: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
    d.sort_by(f64::total_cmp);
    d.get(d.len() / 2).copied().unwrap_or(0.0).max(0.0)
}

/// The rate series of `ts` over `[t0, t0 + span]` drawn `columns` pixels wide.
pub fn rate_series(ts: &[f64], t0: f64, span: f64, columns: usize) -> RateSeries {
    let span = span.max(1e-9);
    let width = (span / columns.max(1) as f64).max(5.0 * median_period(ts));
    let bins = ((span / width).ceil() as usize).max(1);
    // (count, first, last) per bin.
    let mut acc = vec![(0usize, f64::INFINITY, f64::NEG_INFINITY); bins];
    for &t in ts {
        let k = (((t - t0) / width).floor().max(0.0) as usize).min(bins - 1);
        let b = &mut acc[k];
        b.0 += 1;
        b.1 = b.1.min(t);
        b.2 = b.2.max(t);
    }
    let values = acc
        .into_iter()
        .map(|(n, first, last)| (n >= 2 && last > first).then(|| (n - 1) as f64 / (last - first)))
        .collect();
    RateSeries { width, values }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steady(hz: f64, secs: f64, jitter: f64) -> Vec<f64> {
        let n = (hz * secs) as usize;
        // A deterministic jitter of up to `jitter` seconds either way.
        (0..n)
            .map(|i| {
                let wobble = ((i as f64 * 12.9898).sin() * 43758.5453).fract();
                1.7e9 + i as f64 / hz + jitter * wobble
            })
            .collect()
    }

    fn spread(s: &RateSeries) -> f64 {
        let v: Vec<f64> = s.values.iter().flatten().copied().collect();
        assert!(v.len() >= 10, "too few bins to judge: {}", v.len());
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
        (hi - lo) / hi
    }

    #[test]
    fn a_steady_sensor_is_a_flat_line_at_any_length() {
        // The cases: a 10 Hz sensor over 214 s and over 8 s; a jittery 200 Hz imu.
        for (hz, secs, jitter) in [
            (10.0, 214.0, 0.0),
            (10.0, 8.0, 0.0),
            (200.0, 214.0, 0.0005),
            (30.0, 3600.0, 0.001),
        ] {
            let ts = steady(hz, secs, jitter);
            let s = rate_series(&ts, ts[0], ts[ts.len() - 1] - ts[0], 1320);
            let v = spread(&s);
            assert!(
                v < 0.02,
                "{hz} Hz over {secs} s varies by {:.1}%: {:?}",
                v * 100.0,
                &s.values[..10]
            );
            assert!(
                (s.max() - hz).abs() / hz < 0.02,
                "{hz} Hz plotted as {}",
                s.max()
            );
        }
    }

    #[test]
    fn a_gap_breaks_the_line() {
        let mut ts = steady(10.0, 60.0, 0.0);
        ts.retain(|t| !(1.7e9 + 20.0..1.7e9 + 30.0).contains(t));
        let s = rate_series(&ts, ts[0], ts[ts.len() - 1] - ts[0], 600);
        let k = (25.0 / s.width) as usize;
        assert_eq!(s.values[k], None, "no rate in the gap");
        // 6 s either side of the gap's middle: outside it.
        let off = (6.0 / s.width) as usize;
        assert!(s.values[k - off].is_some() && s.values[k + off].is_some());
    }

    #[test]
    fn bins_are_at_least_five_periods() {
        let ts = steady(10.0, 8.0, 0.0);
        let s = rate_series(&ts, ts[0], 8.0, 1320);
        assert!((s.width - 0.5).abs() < 1e-6, "{}", s.width);
        assert_eq!(rate_series(&[], 0.0, 1.0, 100).values, vec![None; 100]);
    }
}
