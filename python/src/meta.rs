//! `meta.json` and sample counts for the Python half, by core's rules: `roverlog.trace` reads
//! a sensor's channel descriptions and counts its samples here rather than again in Python.
//!
//! - `sensor_meta(sensor_dir)`: `meta.json` read with core's size limit and checked whole
//!   (`format::meta::SensorMeta::parse`: every description, names, shapes, sample sizes,
//!   `ts`), plus the rule of `roverlog.Sensor` that a sensor has a `ts` channel;
//! - `channel_meta(sensor_dir, channel, entry)`: one description given without a
//!   `meta.json` (upstream's channel classes are given theirs), checked the same way;
//! - `ts_count(sensor_dir)`: the samples a sensor's `ts` counts (`format::bounds`).

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use serde_json::{Map, Value};

use roverlog_core::format::bounds;
use roverlog_core::format::meta::{MAX_META_BYTES, META_FILE};
use roverlog_core::format::{ChannelMeta, SensorMeta, TS_CHANNEL};

use crate::{to_py, Kind};

/// `sensor_meta(sensor_dir)`: the JSON text of the sensor's `meta.json` object, its channels
/// in declared order with every member as written, once core accepted the whole file.
#[pyfunction]
pub(crate) fn sensor_meta(py: Python<'_>, sensor_dir: PathBuf) -> PyResult<String> {
    let path = sensor_dir.join(META_FILE);
    let bytes = crate::gil::detach(py, || {
        roverlog_core::io::read_limited_required(&path, MAX_META_BYTES, "sensor metadata")
            .and_then(|bytes| SensorMeta::parse(&bytes, &path).map(|_| bytes))
    })
    .map_err(to_py)?;
    let doc: Map<String, Value> =
        serde_json::from_slice(&bytes).expect("an object: SensorMeta::parse accepted it");
    if !doc.contains_key(TS_CHANNEL) {
        return Err(Kind::Format.err(format!("{}: no {TS_CHANNEL:?} channel", path.display())));
    }
    Ok(serde_json::to_string(&doc).expect("JSON values"))
}

/// `channel_meta(sensor_dir, channel, entry)`: `(format, type code, shape)` of the
/// description given as the JSON text of its `meta.json` entry, checked as `meta.json`'s
/// entries are. `type` comes back as core names it (`f4` for `<f4`).
#[pyfunction]
pub(crate) fn channel_meta(
    sensor_dir: PathBuf,
    channel: &str,
    entry: &str,
) -> PyResult<(String, String, Vec<usize>)> {
    let meta = entry_meta(&sensor_dir, channel, entry)?;
    Ok((
        meta.format.as_str().to_string(),
        meta.dtype.code().to_string(),
        meta.shape,
    ))
}

/// `ts_count(sensor_dir)`: whole `f8` values in the sensor's `ts`; `None` without one.
#[pyfunction]
pub(crate) fn ts_count(sensor_dir: PathBuf) -> Option<u64> {
    bounds::ts_count(&sensor_dir)
}

/// The description of `channel` given as the JSON text of its `meta.json` entry, checked as
/// `meta.json`'s entries are: as one sensor of this channel and its timestamps (a sensor
/// needs `ts`). Errors name `<sensor_dir>/meta.json` and the channel, as a sensor's do.
pub(crate) fn entry_meta(sensor_dir: &Path, channel: &str, entry: &str) -> PyResult<ChannelMeta> {
    let path = sensor_dir.join(META_FILE);
    let entry: Value = serde_json::from_str(entry).map_err(|e| {
        Kind::Format.err(format!(
            "{}: channel {channel:?}: description: {e}",
            path.display()
        ))
    })?;
    let mut sensor = Map::new();
    if channel != TS_CHANNEL {
        let spec = serde_json::json!({"format": "raw", "type": "f8", "shape": []});
        sensor.insert(TS_CHANNEL.to_string(), spec);
    }
    sensor.insert(channel.to_string(), entry);
    let bytes = serde_json::to_vec(&Value::Object(sensor)).expect("JSON values");
    let meta = SensorMeta::parse(&bytes, &path).map_err(to_py)?;
    Ok(meta
        .get(channel)
        .cloned()
        .expect("the channel just inserted"))
}
