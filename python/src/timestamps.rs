//! The timestamp models of core's `timestamps` (upstream `roverd.timestamps`) for
//! `roverlog.redrover.timestamps`: `smooth(x, interval)` and `discretize(x, interval, eps)`
//! over float64 epoch seconds, without the GIL. An input core refuses (time that does not
//! advance, an interval that is not a positive number) raises `roverlog.FormatError` (a
//! `ValueError`) with core's message.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use roverlog_core::timestamps;

use crate::to_py;

/// The timestamps `x` smoothed over blocks of `interval` seconds (core's `smooth`).
#[pyfunction]
pub(crate) fn smooth<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    interval: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let x = x.as_array().to_vec();
    let out = crate::gil::detach(py, || timestamps::smooth(&x, interval)).map_err(to_py)?;
    Ok(out.into_pyarray_bound(py))
}

/// The timestamps `x` with gaps as whole frame periods over blocks of `interval` seconds
/// (core's `discretize`).
#[pyfunction]
pub(crate) fn discretize<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    interval: f64,
    eps: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let x = x.as_array().to_vec();
    let out =
        crate::gil::detach(py, || timestamps::discretize(&x, interval, eps)).map_err(to_py)?;
    Ok(out.into_pyarray_bound(py))
}
