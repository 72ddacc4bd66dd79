//! `roverlog._roverlog`: the native half of the `roverlog` Python package. Everything that
//! decodes (lzma/lzmaf frames, JPEG frames of `jpg` and `mjpg` channels, gulp frames) runs
//! here, on every core, without the GIL; the Python half (`roverlog/*.py`) holds the objects
//! users see, maps `raw` channels zero-copy with numpy, and pickles by path.
//!
//! No panic is expected to reach Python (pyo3 would turn one into `PanicException`); every
//! library error becomes `FileNotFoundError`, `OSError`, `IndexError` or `roverlog.Error`
//! (a `ValueError`) carrying the library's message.

// pyo3 0.22's macros test a `gil-refs` feature this crate does not declare, and convert
// errors into themselves in the code `#[pyfunction]` generates.
#![allow(unexpected_cfgs, clippy::useless_conversion)]

use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use roverlog_core::format::{ChannelFormat, ChannelReader, Sensor};

mod driver;
mod gulp;
mod zarr;

pyo3::create_exception!(
    _roverlog,
    Error,
    PyValueError,
    "A dataset roverlog cannot read as asked (corrupt, unsupported, inconsistent)."
);

pub(crate) fn to_py(e: roverlog_core::Error) -> PyErr {
    match &e {
        roverlog_core::Error::Io { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            PyFileNotFoundError::new_err(e.to_string())
        }
        roverlog_core::Error::Io { .. } => PyOSError::new_err(e.to_string()),
        roverlog_core::Error::OutOfRange { .. } => PyIndexError::new_err(e.to_string()),
        _ => Error::new_err(e.to_string()),
    }
}

/// A decoding thread's result, its panic (a decoder bug) turned into an error, so that it
/// reaches Python as `roverlog.Error` rather than pyo3's `PanicException`.
fn joined(r: std::thread::Result<roverlog_core::Result<()>>) -> roverlog_core::Result<()> {
    r.unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(roverlog_core::Error::Codec {
            codec: "decoder".into(),
            msg: format!("a decoding thread panicked: {why}"),
        })
    })
}

/// Splits `start..start+count` over the cores and runs `f(range, out_chunk)` on each, where
/// `out` holds `per` bytes per sample.
fn parallel_fill(
    start: u64,
    count: u64,
    per: usize,
    out: &mut [u8],
    f: impl Fn(std::ops::Range<u64>, &mut [u8]) -> roverlog_core::Result<()> + Sync,
) -> roverlog_core::Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(count.max(1) as usize);
    let each = count.div_ceil(threads as u64).max(1);
    std::thread::scope(|s| {
        let mut rest = out;
        let mut handles = Vec::new();
        let mut from = start;
        while from < start + count {
            let to = (from + each).min(start + count);
            let (mine, tail) = rest.split_at_mut((to - from) as usize * per);
            rest = tail;
            let f = &f;
            handles.push(s.spawn(move || f(from..to, mine)));
            from = to;
        }
        handles.into_iter().try_for_each(|h| joined(h.join()))
    })
}

fn open_channel(dir: &Path, name: &str) -> roverlog_core::Result<ChannelReader> {
    Sensor::open(dir)?.channel(name)
}

/// Samples `start .. start + count` of fixed-size channel `name`, decoded, back to back.
fn read_fixed(
    dir: &Path,
    name: &str,
    start: u64,
    count: u64,
    per: usize,
) -> roverlog_core::Result<Vec<u8>> {
    let mut out = vec![0u8; count as usize * per];
    let first = open_channel(dir, name)?;
    if let ChannelReader::Lzma(_) = first {
        // One stream for the whole file: decoded once, in order.
        let mut r = first;
        let mut pos = 0;
        r.visit(start..start + count, |_, b| {
            out[pos..pos + per].copy_from_slice(b);
            pos += per;
            Ok(())
        })?;
        return Ok(out);
    }
    parallel_fill(start, count, per, &mut out, |range, chunk| {
        let mut r = open_channel(dir, name)?;
        for (k, i) in range.enumerate() {
            chunk[k * per..(k + 1) * per].copy_from_slice(&r.get(i)?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// Every JPEG of `range`, decoded to RGB on every core: the pixels back to back and the
/// frame shape (all frames must share it).
fn decode_frames(
    dir: &Path,
    name: &str,
    start: u64,
    count: u64,
) -> roverlog_core::Result<(Vec<u8>, [usize; 3])> {
    let r = open_channel(dir, name)?;
    let mut r = r;
    if count == 0 {
        return Ok((Vec::new(), [0, 0, 3]));
    }
    let first = roverlog_core::jpeg::decode_jpeg(&r.get(start)?)?;
    let shape = [first.height, first.width, 3];
    let per = shape.iter().product::<usize>();
    let mut out = vec![0u8; count as usize * per];
    parallel_fill(start, count, per, &mut out, |range, chunk| {
        let mut r = open_channel(dir, name)?;
        for (k, i) in range.enumerate() {
            let rgb = roverlog_core::format::avi::decode_rgb(&r.get(i)?)?;
            if rgb.len() != per {
                return Err(roverlog_core::Error::Codec {
                    codec: "jpeg".into(),
                    msg: format!(
                        "{name}: frame {i} decodes to {} bytes, frame {start} to {per} ({}x{}x3): frames of different sizes cannot share one array (read them one at a time, or decode=False)",
                        rgb.len(),
                        shape[0],
                        shape[1]
                    ),
                });
            }
            chunk[k * per..(k + 1) * per].copy_from_slice(&rgb);
        }
        Ok(())
    })?;
    Ok((out, shape))
}

/// What `read` returns: the data, and the frame shape of decoded JPEG frames.
type Read = (PyObject, Option<(usize, usize, usize)>);

/// `read(sensor_dir, channel, start, count, decode)`:
/// - fixed-size channels (`raw`, `lzma`, `lzmaf`): `(uint8 array of count * sample bytes, None)`;
/// - `jpg`/`mjpg` with `decode`: `(uint8 array of the RGB pixels, (height, width, 3))`;
/// - otherwise (`npz`, or `decode=False`): `(list of bytes, None)`.
#[pyfunction]
#[pyo3(signature = (sensor_dir, channel, start, count, decode=true))]
fn read(
    py: Python<'_>,
    sensor_dir: PathBuf,
    channel: &str,
    start: u64,
    count: u64,
    decode: bool,
) -> PyResult<Read> {
    let sensor = Sensor::open(&sensor_dir).map_err(to_py)?;
    let meta =
        sensor.meta().get(channel).cloned().ok_or_else(|| {
            PyKeyError(format!("{}: no channel {channel:?}", sensor_dir.display()))
        })?;
    let len = sensor
        .channel(channel)
        .and_then(|mut r| r.len())
        .map_err(to_py)?;
    if start.checked_add(count).is_none_or(|end| end > len) {
        return Err(PyIndexError::new_err(format!(
            "{}/{channel}: samples {start}..{} out of range (channel holds {len})",
            sensor_dir.display(),
            start.saturating_add(count)
        )));
    }
    let jpeg = matches!(meta.format, ChannelFormat::Mjpg)
        || meta.format == ChannelFormat::Blob("jpg".into());
    if meta.format.is_fixed_size() {
        let per = meta.sample_bytes();
        let v = py
            .allow_threads(|| read_fixed(&sensor_dir, channel, start, count, per))
            .map_err(to_py)?;
        return Ok((v.into_pyarray_bound(py).into_any().unbind(), None));
    }
    if jpeg && decode {
        let (v, [h, w, c]) = py
            .allow_threads(|| decode_frames(&sensor_dir, channel, start, count))
            .map_err(to_py)?;
        let a: Bound<'_, PyArray1<u8>> = v.into_pyarray_bound(py);
        return Ok((a.into_any().unbind(), Some((h, w, c))));
    }
    let frames: Vec<Vec<u8>> = py
        .allow_threads(|| -> roverlog_core::Result<Vec<Vec<u8>>> {
            let mut r = open_channel(&sensor_dir, channel)?;
            (start..start + count)
                .map(|i| r.get(i).map(|b| b.into_owned()))
                .collect()
        })
        .map_err(to_py)?;
    let list = PyList::new_bound(py, frames.iter().map(|f| PyBytes::new_bound(py, f)));
    Ok((list.into_any().unbind(), None))
}

#[allow(non_snake_case)]
fn PyKeyError(msg: String) -> PyErr {
    pyo3::exceptions::PyKeyError::new_err(msg)
}

/// `validate(path)`: the problems `roverlog validate` would print for the sensor in `path`
/// (an empty list when it is sound).
#[pyfunction]
fn check_sensor(py: Python<'_>, path: PathBuf) -> PyResult<Vec<String>> {
    let c = py
        .allow_threads(|| {
            roverlog_core::format::check_sensor(&path, roverlog_core::format::Depth::Structure)
        })
        .map_err(to_py)?;
    Ok(c.all_problems())
}

/// `sample_count(sensor_dir, channel)`: samples the channel holds.
#[pyfunction]
fn sample_count(sensor_dir: PathBuf, channel: &str) -> PyResult<u64> {
    open_channel(&sensor_dir, channel)
        .and_then(|mut r| r.len())
        .map_err(to_py)
}

#[pymodule]
fn _roverlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type_bound::<Error>())?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(check_sensor, m)?)?;
    m.add_function(wrap_pyfunction!(sample_count, m)?)?;
    m.add_class::<driver::NativeDriver>()?;
    m.add_class::<gulp::GulpDir>()?;
    m.add_class::<zarr::ZarrArr>()?;
    Ok(())
}
