//! The native half of `roverlog.zarr`: an opened Zarr v2 array whose row reads decode chunks
//! on several threads (`threads.rs`) without the GIL; the bytes come back packed and little-endian, and the
//! Python half views them with the array's dtype.
//!
//! `.zarray` is read here only, by core's rules (its size limit, `zarr::ArrayMeta::parse`):
//! the Python half takes the shape, chunks, order, dimension separator and the decoded fill
//! value from core, and the document's JSON text (`meta_json`) for what it hands on verbatim
//! (the dtype description to numpy, the codecs' configurations to numcodecs). `.zattrs` is
//! read here too (`zarr_attrs`), within the same limit.

use std::path::PathBuf;

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use roverlog_core::zarr::meta::read_attrs;
use roverlog_core::zarr::{ArrayMeta, Order, ZarrArray, MAX_META_BYTES};

use crate::to_py;

#[pyclass(module = "roverlog._roverlog")]
pub struct ZarrArr {
    arr: ZarrArray,
    /// The `.zarray` object as JSON text, as core read and accepted it.
    doc: String,
}

#[pymethods]
impl ZarrArr {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<ZarrArr> {
        let (arr, bytes) = crate::gil::detach(py, || {
            let arr = ZarrArray::open(&path)?;
            // Read again for the members core keeps parsed only (the codecs' configurations):
            // within the same limit, and accepted by the same parser.
            let file = path.join(".zarray");
            let bytes =
                roverlog_core::io::read_limited_required(&file, MAX_META_BYTES, "metadata file")?;
            ArrayMeta::parse(&bytes, &file)?;
            Ok::<_, roverlog_core::Error>((arr, bytes))
        })
        .map_err(to_py)?;
        let doc: serde_json::Value =
            serde_json::from_slice(&bytes).expect("JSON: ArrayMeta::parse accepted it");
        let doc = doc.to_string();
        Ok(ZarrArr { arr, doc })
    }

    /// The `.zarray` document as JSON text (core accepted it).
    fn meta_json(&self) -> &str {
        &self.doc
    }

    /// `shape` as written (`[]` for a 0-d array).
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.arr.meta().shape.clone()
    }

    /// `chunks` as written.
    #[getter]
    fn chunks(&self) -> Vec<u64> {
        self.arr.meta().chunks.clone()
    }

    /// `"C"` or `"F"` (`"C"` when `.zarray` names none).
    #[getter]
    fn order(&self) -> &'static str {
        match self.arr.meta().order {
            Order::C => "C",
            Order::F => "F",
        }
    }

    /// `"."` (also when `.zarray` names none) or `"/"`.
    #[getter]
    fn dimension_separator(&self) -> String {
        self.arr.meta().dimension_separator.to_string()
    }

    /// One element of fill as core decoded `fill_value`, in the stored byte order; `None` for
    /// `fill_value: null`.
    #[getter]
    fn fill_value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let fill = self.arr.meta().fill_value.as_deref()?;
        Some(PyBytes::new_bound(py, fill))
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

/// `zarr_attrs(dir)`: the JSON text of `<dir>/.zattrs` (`{}` when there is none), read within
/// core's limit and refused unless it is a JSON object (`zarr::meta::read_attrs`).
#[pyfunction]
pub(crate) fn zarr_attrs(py: Python<'_>, dir: PathBuf) -> PyResult<String> {
    let attrs = crate::gil::detach(py, || read_attrs(&dir)).map_err(to_py)?;
    Ok(serde_json::Value::Object(attrs).to_string())
}
