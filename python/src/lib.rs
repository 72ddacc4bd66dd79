//! `roverlog._roverlog`: the native half of the `roverlog` Python package. Everything that
//! decodes (lzma/lzmaf frames, JPEG frames of `jpg` and `mjpg` channels, gulp frames) runs
//! here, on every core (or as many threads as `roverlog.set_threads` says), without the GIL;
//! the Python half (`roverlog/*.py`) holds the objects users see, maps `raw` channels
//! zero-copy with numpy, and pickles by path.
//!
//! No panic is expected to reach Python (pyo3 would turn one into `PanicException`); every
//! library error becomes one of the classes of `roverlog/errors.py` (`errors.rs`), carrying
//! the library's message. Bulk reads decode on `threads::current()` threads (`threads.rs`).

// pyo3 0.22's macros test a `gil-refs` feature this crate does not declare, and convert
// errors into themselves in the code `#[pyfunction]` generates.
#![allow(unexpected_cfgs, clippy::useless_conversion)]

use std::path::PathBuf;

use pyo3::prelude::*;

mod channel;
mod driver;
mod errors;
mod gil;
mod gulp;
mod jpeg;
mod meta;
mod ouster;
mod remote_trace;
mod threads;
mod timestamps;
mod zarr;

pub(crate) use errors::{bind_to_py, client_to_py, to_py, BindError, Kind};

/// A decoding thread's result, its panic (a decoder bug) turned into an error, so that it
/// reaches Python as `roverlog.FormatError` rather than pyo3's `PanicException`.
fn joined(r: std::thread::Result<Result<(), BindError>>) -> Result<(), BindError> {
    r.unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(BindError::Panicked { why })
    })
}

/// Splits `start..start+count` over `threads::current()` threads and runs
/// `f(range, out_chunk)` on each, where `out` holds `per` bytes per sample.
/// The guarded value of `m`, also after a thread panicked holding it: what it guards (an
/// open reader, a driver's buffers) stays consistent between calls, and Python code must not
/// be locked out by an earlier panic.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn parallel_fill(
    start: u64,
    count: u64,
    per: usize,
    out: &mut [u8],
    f: impl Fn(std::ops::Range<u64>, &mut [u8]) -> Result<(), BindError> + Sync,
) -> Result<(), BindError> {
    let threads = threads::current().min(count.max(1) as usize);
    if threads <= 1 {
        // In the caller's thread: a read told to use one thread starts none.
        let all = std::panic::AssertUnwindSafe(|| f(start..start + count, out));
        return joined(std::panic::catch_unwind(all));
    }
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

/// `validate(path)`: the problems `roverlog validate` would print for the sensor in `path`
/// (an empty list when it is sound).
#[pyfunction]
fn check_sensor(py: Python<'_>, path: PathBuf) -> PyResult<Vec<String>> {
    let c = crate::gil::detach(py, || {
        roverlog_core::format::check_sensor(&path, roverlog_core::format::Depth::Structure)
    })
    .map_err(to_py)?;
    Ok(c.all_problems())
}

#[pymodule]
fn _roverlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    threads::init();
    m.add_function(wrap_pyfunction!(threads::set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(threads::threads, m)?)?;
    m.add_function(wrap_pyfunction!(threads::_mark_worker, m)?)?;
    m.add_function(wrap_pyfunction!(check_sensor, m)?)?;
    m.add_function(wrap_pyfunction!(meta::sensor_meta, m)?)?;
    m.add_function(wrap_pyfunction!(meta::channel_meta, m)?)?;
    m.add_function(wrap_pyfunction!(meta::ts_count, m)?)?;
    m.add_function(wrap_pyfunction!(timestamps::smooth, m)?)?;
    m.add_function(wrap_pyfunction!(timestamps::discretize, m)?)?;
    m.add_function(wrap_pyfunction!(zarr::zarr_attrs, m)?)?;
    m.add_function(wrap_pyfunction!(jpeg::set_jpeg_decoder, m)?)?;
    m.add_function(wrap_pyfunction!(jpeg::jpeg_decoder, m)?)?;
    m.add_class::<channel::NativeChannel>()?;
    m.add_class::<driver::NativeDriver>()?;
    m.add_function(wrap_pyfunction!(driver::check_file_name, m)?)?;
    m.add_class::<gulp::GulpDir>()?;
    m.add_class::<zarr::ZarrArr>()?;
    m.add_class::<ouster::OusterLut>()?;
    m.add_class::<remote_trace::NativeRemoteTrace>()?;
    m.add_function(wrap_pyfunction!(remote_trace::find_traces, m)?)?;
    Ok(())
}
