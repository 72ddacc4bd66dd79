//! The native half of `roverlog.zarr`: an opened Zarr v2 array whose row reads decode chunks
//! on several threads (`threads.rs`) without the GIL; the bytes come back packed and little-endian, and the
//! Python half views them with the array's dtype.

use std::path::PathBuf;

use numpy::IntoPyArray;
use pyo3::prelude::*;

use roverlog_core::zarr::ZarrArray;

use crate::to_py;

#[pyclass(module = "roverlog._roverlog")]
pub struct ZarrArr {
    arr: ZarrArray,
}

#[pymethods]
impl ZarrArr {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<ZarrArr> {
        let arr = crate::gil::detach(py, || ZarrArray::open(&path)).map_err(to_py)?;
        Ok(ZarrArr { arr })
    }

    /// Rows (first dimension; 1 for a 0-d array).
    fn __len__(&self) -> usize {
        self.arr.len() as usize
    }

    /// Bytes per row.
    #[getter]
    fn row_bytes(&self) -> usize {
        self.arr.row_bytes()
    }

    /// Sets the budget of the decoded-chunk cache (0 disables it).
    fn set_cache_bytes(&self, bytes: usize) {
        self.arr.set_cache_bytes(bytes);
    }

    /// Rows `start .. stop`, packed little-endian, as a flat uint8 array.
    fn read_rows(&self, py: Python<'_>, start: u64, stop: u64) -> PyResult<PyObject> {
        // Automatic: the library's own choice (up to 8 of the cores), one in a worker.
        let threads = crate::threads::chosen().unwrap_or_else(|| crate::threads::current().min(8));
        self.arr.set_threads(threads);
        let v = crate::gil::detach(py, || self.arr.read_rows(start..stop)).map_err(to_py)?;
        Ok(v.into_pyarray_bound(py).into_any().unbind())
    }
}
