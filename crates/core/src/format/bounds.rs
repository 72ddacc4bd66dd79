//! What a channel reader answers for a sample it cannot give: [`Error::DamagedSample`] when
//! the sensor counts the sample (its `ts`, or the channel's own index or listing when there
//! is no `ts` to go by), [`Error::OutOfRange`] past that. Each format's reader holds the
//! sensor's count as [`Expected`] and finds the [`Damage`] itself; the rule is here once.

use std::path::Path;

use crate::error::{zero_filled, Damage, Error, JpegProblem};

/// The sensor's `ts` count a channel is read against, taken when its reader opened (before
/// the channel's own files: `ts` trails the data, so a channel still being recorded is not
/// taken for a damaged one). `None`: the `ts` channel itself, a channel read on its own, or
/// a sensor without a `ts` file; then the channel's own listing says what it should hold.
pub type Expected = Option<u64>;

/// The `ts` count of the sensor in `sensor_dir` (whole `f8` values), `None` without a `ts`
/// file.
pub fn ts_count(sensor_dir: &Path) -> Expected {
    let ts = sensor_dir.join(super::meta::TS_CHANNEL);
    std::fs::metadata(ts).ok().map(|m| m.len() / 8)
}

/// The count a channel reports: what `ts` and its intact data agree on.
pub fn agreed(intact: u64, expected: Expected) -> u64 {
    expected.map_or(intact, |n| n.min(intact))
}

/// The error for sample `index` of the channel at `path`, which the reader cannot give:
/// damaged when `index` is below what the sensor counts (`expected`, else `listed`, the
/// channel's own count of the samples it should hold), else out of range of `len`.
pub fn unreadable(
    path: &Path,
    index: u64,
    len: u64,
    listed: u64,
    expected: Expected,
    damage: impl FnOnce() -> Damage,
) -> Error {
    if index < expected.unwrap_or(listed) {
        Error::DamagedSample {
            path: path.to_path_buf(),
            index,
            damage: damage(),
        }
    } else {
        Error::OutOfRange {
            path: path.to_path_buf(),
            index,
            len,
        }
    }
}

/// Sample `index` of the channel at `path`, read whole (`bytes`) but not decoding as a JPEG
/// (`error`, the decoder's): a damaged sample, zero-filled (recovery cuts it) or not. An
/// error that says nothing of the bytes (an image over the pixel limit, an output buffer of
/// another size) is returned as it is.
pub fn undecodable_jpeg(path: &Path, index: u64, bytes: &[u8], error: Error) -> Error {
    let damage = match &error {
        Error::Jpeg(JpegProblem::TooLarge { .. } | JpegProblem::OutputSize { .. }) => return error,
        _ if zero_filled(bytes) => Damage::ZeroFilled,
        // A frame without its end-of-image marker: the check's own error, as it is.
        Error::Jpeg(JpegProblem::Truncated { .. }) => return error,
        Error::Jpeg(_) => Damage::JpegUndecodable(error.to_string()),
        _ => return error,
    };
    Error::DamagedSample {
        path: path.to_path_buf(),
        index,
        damage,
    }
}
