//! What is wrong with an Ouster `lidar.json` or a depth frame projected with it
//! ([`super::Error::Lidar`]), as values. Beside the error type, below `ouster`, which produces
//! them. Keys are dotted paths into the document (`beam_intrinsics.beam_altitude_angles`).

use std::fmt;

/// Why a `lidar.json` was refused, or a depth frame could not be projected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LidarProblem {
    /// A key the projection needs is not in the document.
    Missing { key: String },
    /// A key whose value is not of the expected kind.
    NotA { key: String, expected: &'static str },
    /// An array of another length than the beam count or the transform size.
    Length {
        key: String,
        got: usize,
        expected: usize,
    },
    /// A number outside what a sensor can have (beam and column counts, pixel shifts).
    OutOfRange {
        key: String,
        value: i64,
        min: i64,
        max: i64,
    },
    /// An angle or transform entry that is NaN or infinite.
    NotFinite { key: String, index: usize },
    /// A depth frame of another size than the sensor's `beams x columns`.
    FrameSize {
        got: usize,
        beams: usize,
        columns: usize,
    },
}

impl fmt::Display for LidarProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LidarProblem::Missing { key } => write!(f, "missing key {key:?}"),
            LidarProblem::NotA { key, expected } => write!(f, "{key:?} is not {expected}"),
            LidarProblem::Length { key, got, expected } => {
                write!(f, "{key:?} has {got} entries, expected {expected}")
            }
            LidarProblem::OutOfRange {
                key,
                value,
                min,
                max,
            } => write!(f, "{key:?} is {value}, outside {min}..={max}"),
            LidarProblem::NotFinite { key, index } => {
                write!(f, "{key:?}[{index}] is not a finite number")
            }
            LidarProblem::FrameSize {
                got,
                beams,
                columns,
            } => write!(
                f,
                "depth frame has {got} pixels, the sensor has {beams} beams x {columns} columns"
            ),
        }
    }
}
