//! Which frames of a video to read, with the meaning Python gives to `frames[a:b:c]` and
//! `[frames[i] for i in idx]` (what gulpio2 accepts as its `slice_`).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, SelectionProblem};

/// A selection of frames of one video.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FrameSelection {
    /// Every frame.
    #[default]
    All,
    /// A Python slice `start:stop:step`: missing bounds default as in Python, negative bounds
    /// count from the end, out-of-range bounds are clamped; `step` must not be 0.
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    },
    /// Explicit indices in the given order (repeats allowed); negative ones count from the
    /// end; an index out of range is an error.
    Indices(Vec<i64>),
}

impl FrameSelection {
    /// `start..stop` with step 1.
    pub fn range(start: i64, stop: i64) -> Self {
        FrameSelection::Slice {
            start: Some(start),
            stop: Some(stop),
            step: 1,
        }
    }

    /// The frame indices selected out of `len` frames, in order.
    pub fn resolve(&self, len: usize) -> Result<Vec<usize>, SelectionProblem> {
        let n = i64::try_from(len).map_err(|_| SelectionProblem::TooManyFrames)?;
        match self {
            FrameSelection::All => Ok((0..len).collect()),
            FrameSelection::Indices(idx) => idx
                .iter()
                .map(|&i| {
                    let j = if i < 0 { i + n } else { i };
                    if (0..n).contains(&j) {
                        Ok(j as usize)
                    } else {
                        Err(SelectionProblem::IndexOutOfRange { index: i, len })
                    }
                })
                .collect(),
            &FrameSelection::Slice { start, stop, step } => {
                if step == 0 {
                    return Err(SelectionProblem::ZeroStep);
                }
                // CPython's PySlice_AdjustIndices.
                let adjust = |v: Option<i64>, default: i64, lo: i64, hi: i64| match v {
                    None => default,
                    Some(v) if v < 0 => (v.saturating_add(n)).max(lo),
                    Some(v) => v.min(hi),
                };
                let (mut i, end) = if step > 0 {
                    (adjust(start, 0, 0, n), adjust(stop, n, 0, n))
                } else {
                    (adjust(start, n - 1, -1, n - 1), adjust(stop, -1, -1, n - 1))
                };
                let mut out = Vec::new();
                while (step > 0 && i < end) || (step < 0 && i > end) {
                    out.push(i as usize);
                    i = match i.checked_add(step) {
                        Some(v) => v,
                        None => break,
                    };
                }
                Ok(out)
            }
        }
    }
}

impl FromStr for FrameSelection {
    type Err = Error;

    /// Parses `a:b`, `a:b:c` (any part may be empty, as in Python), a single index `i`, or a
    /// comma-separated index list `i,j,k`.
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s).map_err(Error::FrameSelection)
    }
}

impl FrameSelection {
    fn parse(s: &str) -> Result<Self, SelectionProblem> {
        let s = s.trim();
        let int = |p: &str| -> Result<Option<i64>, SelectionProblem> {
            let p = p.trim();
            if p.is_empty() {
                Ok(None)
            } else {
                p.parse()
                    .map(Some)
                    .map_err(|_| SelectionProblem::NotInteger { part: p.to_owned() })
            }
        };
        if s.contains(':') {
            let parts: Vec<&str> = s.split(':').collect();
            if parts.len() > 3 {
                return Err(SelectionProblem::SliceParts { spec: s.to_owned() });
            }
            let step = match parts.get(2) {
                Some(p) => int(p)?.unwrap_or(1),
                None => 1,
            };
            if step == 0 {
                return Err(SelectionProblem::ZeroStepIn { spec: s.to_owned() });
            }
            Ok(FrameSelection::Slice {
                start: int(parts[0])?,
                stop: int(parts[1])?,
                step,
            })
        } else {
            let idx = s
                .split(',')
                .map(|p| int(p)?.ok_or_else(|| SelectionProblem::EmptyIndex { spec: s.to_owned() }))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(FrameSelection::Indices(idx))
        }
    }
}

impl fmt::Display for FrameSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: &Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        match self {
            FrameSelection::All => f.write_str(":"),
            FrameSelection::Slice { start, stop, step } => {
                write!(f, "{}:{}", opt(start), opt(stop))?;
                if *step != 1 {
                    write!(f, ":{step}")?;
                }
                Ok(())
            }
            FrameSelection::Indices(idx) => {
                let parts: Vec<String> = idx.iter().map(i64::to_string).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str, len: usize) -> Vec<usize> {
        s.parse::<FrameSelection>().unwrap().resolve(len).unwrap()
    }

    #[test]
    fn matches_python_slices() {
        // Expected values from Python: list(range(7))[s].
        assert_eq!(sel("1:4:2", 7), [1, 3]);
        assert_eq!(sel(":", 7), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(sel("-2:", 7), [5, 6]);
        assert_eq!(sel("::-1", 4), [3, 2, 1, 0]);
        assert_eq!(sel("5:1:-2", 7), [5, 3]);
        assert_eq!(sel("-100:100", 3), [0, 1, 2]);
        assert_eq!(sel("3:1", 7), Vec::<usize>::new());
        assert_eq!(sel("10:", 7), Vec::<usize>::new());
        assert_eq!(sel(":-100:-1", 3), [2, 1, 0]);
        assert_eq!(sel("-100::-1", 3), Vec::<usize>::new());
        assert_eq!(sel("::-1", 0), Vec::<usize>::new());
    }

    #[test]
    fn indices() {
        assert_eq!(sel("0,-1,0", 3), [0, 2, 0]);
        assert_eq!(sel("2", 3), [2]);
        assert!("3".parse::<FrameSelection>().unwrap().resolve(3).is_err());
        assert!("-4".parse::<FrameSelection>().unwrap().resolve(3).is_err());
        assert!("1::0".parse::<FrameSelection>().is_err());
        assert!("a:b".parse::<FrameSelection>().is_err());
        assert!("1:2:3:4".parse::<FrameSelection>().is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["1:4:2", ":5", "3:", "0,2,-1"] {
            assert_eq!(s.parse::<FrameSelection>().unwrap().to_string(), s);
        }
    }
}
