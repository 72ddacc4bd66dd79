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

use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;

mod channel;
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
pub(crate) fn parallel_fill(
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

#[allow(non_snake_case)]
pub(crate) fn PyKeyError(msg: String) -> PyErr {
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

#[pymodule]
fn _roverlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type_bound::<Error>())?;
    m.add_function(wrap_pyfunction!(check_sensor, m)?)?;
    m.add_class::<channel::NativeChannel>()?;
    m.add_class::<driver::NativeDriver>()?;
    m.add_class::<gulp::GulpDir>()?;
    m.add_class::<zarr::ZarrArr>()?;
    Ok(())
}
