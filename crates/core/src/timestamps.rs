//! Timestamp models for receive-time jitter, as upstream `roverd.timestamps` defines them:
//!
//! - [`smooth`]: cut the timestamps into consecutive blocks of `blocksize = int(interval *
//!   len / (last - first))` samples (the last block may be shorter) and replace each block by
//!   evenly spaced values from its own first to its own last timestamp (numpy's `linspace`).
//!   For cameras, IMUs and radars whose receive times jitter around a steady rate.
//! - [`discretize`]: the same blocks, but each difference counts as a whole number of periods
//!   (`round(d / median(d))` where that ratio is over `1.5 + eps`, else 1), so a dropped
//!   frame leaves a gap of whole periods; in each block the output starts at the block's first
//!   timestamp and advances by the cumulative counts times `(last - first) / sum(counts)`.
//!   For lidars that drop whole frames.
//!
//! Both follow numpy's arithmetic order (and `round` half to even), so results equal
//! upstream's to the last bit on the same input. Unlike upstream, inputs it cannot handle
//! (fewer than two samples is returned as is; time that does not advance) get an error
//! instead of a division by zero.

use std::str::FromStr;

use crate::error::{Error, Result, TimestampsProblem};

/// Upstream's default `interval` for [`smooth`], in seconds.
pub const SMOOTH_INTERVAL: f64 = 30.0;
/// Upstream's default `interval` for [`discretize`], in seconds.
pub const DISCRETIZE_INTERVAL: f64 = 10.0;
/// Upstream's default `eps` for [`discretize`].
pub const DISCRETIZE_EPS: f64 = 0.05;

/// Which model to apply to a sensor's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Model {
    /// As recorded.
    #[default]
    Raw,
    Smooth {
        interval: f64,
    },
    Discretize {
        interval: f64,
        eps: f64,
    },
}

impl FromStr for Model {
    type Err = Error;

    /// `raw`, `smooth`, `discretize`, with upstream's defaults.
    fn from_str(s: &str) -> Result<Model> {
        match s {
            "raw" => Ok(Model::Raw),
            "smooth" => Ok(Model::Smooth {
                interval: SMOOTH_INTERVAL,
            }),
            "discretize" => Ok(Model::Discretize {
                interval: DISCRETIZE_INTERVAL,
                eps: DISCRETIZE_EPS,
            }),
            other => Err(Error::UnknownModel {
                name: other.to_owned(),
            }),
        }
    }
}

impl Model {
    /// The modelled timestamps.
    pub fn apply(&self, x: &[f64]) -> Result<Vec<f64>> {
        match *self {
            Model::Raw => Ok(x.to_vec()),
            Model::Smooth { interval } => smooth(x, interval),
            Model::Discretize { interval, eps } => discretize(x, interval, eps),
        }
    }
}

/// `int(interval * len(x) / (x[-1] - x[0]))`, checked.
fn blocksize(x: &[f64], interval: f64) -> Result<usize> {
    let span = x[x.len() - 1] - x[0];
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return Err(Error::Timestamps(TimestampsProblem::NotAdvancing {
            samples: x.len(),
            first: x[0],
            last: x[x.len() - 1],
        }));
    }
    if interval.is_nan() || interval <= 0.0 || !interval.is_finite() {
        return Err(Error::Timestamps(TimestampsProblem::Interval { interval }));
    }
    // A block shorter than one sample changes nothing: each sample is its own block.
    Ok(((interval * x.len() as f64 / span) as usize).max(1))
}

/// See the module docs.
pub fn smooth(x: &[f64], interval: f64) -> Result<Vec<f64>> {
    if x.len() < 2 {
        return Ok(x.to_vec());
    }
    let bs = blocksize(x, interval)?;
    let mut out = Vec::with_capacity(x.len());
    for block in x.chunks(bs) {
        let (a, b, n) = (block[0], block[block.len() - 1], block.len());
        if n == 1 {
            out.push(a);
            continue;
        }
        // numpy.linspace: i * step + start, the last value set to stop exactly.
        let step = (b - a) / (n - 1) as f64;
        out.extend((0..n - 1).map(|i| i as f64 * step + a));
        out.push(b);
    }
    Ok(out)
}

/// numpy's median: the middle value, or the mean of the two middle ones.
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// See the module docs.
pub fn discretize(x: &[f64], interval: f64, eps: f64) -> Result<Vec<f64>> {
    if x.len() < 2 {
        return Ok(x.to_vec());
    }
    let bs = blocksize(x, interval)?;
    let d: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let step = median(&d);
    if step.is_nan() || step <= 0.0 {
        return Err(Error::Timestamps(TimestampsProblem::NoPeriod { step }));
    }
    let counts: Vec<f64> = d
        .iter()
        .map(|&di| {
            let r = di / step;
            if r > 1.5 + eps {
                r.round_ties_even()
            } else {
                1.0
            }
        })
        .collect();
    let mut out = Vec::with_capacity(x.len());
    for (k, block) in x.chunks(bs).enumerate() {
        let first = k * bs;
        let c = &counts[first..first + block.len() - 1];
        let total: f64 = c.iter().sum();
        out.push(block[0]);
        if c.is_empty() {
            continue;
        }
        let span = block[block.len() - 1] - block[0];
        let mut cum = 0.0;
        for &ci in c {
            cum += ci;
            out.push(block[0] + cum * span / total);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smooth_follows_the_definition() {
        // 10 samples over 0.9 s, interval 0.3: blocksize int(0.3 * 10 / 0.9) = 3.
        let x = [0.0, 0.11, 0.19, 0.32, 0.4, 0.52, 0.6, 0.69, 0.81, 0.9];
        let y = smooth(&x, 0.3).unwrap();
        let want = [
            0.0,
            0.095,
            0.19, // linspace(0, 0.19, 3)
            0.32,
            0.42000000000000004,
            0.52, // linspace(0.32, 0.52, 3)
            0.6,
            0.7050000000000001,
            0.81, // linspace(0.6, 0.81, 3), as numpy rounds it
            0.9,
        ];
        assert_eq!(y, want);
    }

    #[test]
    fn discretize_counts_dropped_frames_as_whole_periods() {
        // A 0.1 s lidar that dropped one frame after 0.2 and jitters a little.
        let x = [0.0, 0.1, 0.2, 0.41, 0.5, 0.6];
        // d = [0.1, 0.1, 0.21, 0.09, 0.1]; median 0.1; 0.21/0.1 = 2.1 > 1.55 -> 2.
        // blocksize int(100 * 6 / 0.6) = 1000: one block; span 0.6, counts sum 6.
        let y = discretize(&x, 100.0, 0.05).unwrap();
        let want: Vec<f64> = [0.0, 1.0, 2.0, 4.0, 5.0, 6.0]
            .iter()
            .map(|c| 0.0 + c * 0.6 / 6.0)
            .collect();
        assert_eq!(y, want);
    }

    #[test]
    fn short_and_degenerate_inputs() {
        assert_eq!(smooth(&[], 30.0).unwrap(), Vec::<f64>::new());
        assert_eq!(discretize(&[5.0], 10.0, 0.05).unwrap(), vec![5.0]);
        assert!(smooth(&[1.0, 1.0], 30.0).is_err());
        assert!(discretize(&[2.0, 1.0], 10.0, 0.05).is_err());
        assert!("bogus".parse::<Model>().is_err());
        assert_eq!(
            "raw".parse::<Model>().unwrap().apply(&[1.0]).unwrap(),
            vec![1.0]
        );
    }
}
