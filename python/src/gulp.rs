//! The native half of `roverlog.gulp`: an opened GulpIO2 directory (mapped chunks) and
//! frames decoded on every core without the GIL.

use std::path::PathBuf;

use numpy::{IntoPyArray, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use roverlog::gulp::{DecodedFrame, FrameSelection, GulpDirectory};

use crate::to_py;

#[pyclass(module = "roverlog._roverlog")]
pub struct GulpDir {
    dir: GulpDirectory,
}

/// Decodes `frames` on one thread per core, in order.
fn decode_all(frames: &[&[u8]]) -> roverlog::Result<Vec<DecodedFrame>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(frames.len().max(1));
    let each = frames.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let hs: Vec<_> = frames
            .chunks(each)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|f| roverlog::gulp::decode_jpeg(f))
                        .collect::<roverlog::Result<Vec<_>>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(frames.len());
        for h in hs {
            out.extend(h.join().expect("a decoding thread panicked")?);
        }
        Ok(out)
    })
}

#[pymethods]
impl GulpDir {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<GulpDir> {
        let dir = py
            .allow_threads(|| GulpDirectory::open(&path))
            .map_err(to_py)?;
        Ok(GulpDir { dir })
    }

    /// `[(id, chunk number, frame count)]` in the directory's order.
    fn videos(&self) -> Vec<(String, u64, usize)> {
        self.dir
            .videos()
            .map(|v| (v.id().to_string(), v.chunk(), v.frame_count()))
            .collect()
    }

    /// `[(chunk number, data path, meta path)]`.
    fn chunks(&self) -> Vec<(u64, PathBuf, PathBuf)> {
        self.dir
            .chunks()
            .map(|c| (c.number, c.data.clone(), c.meta.clone()))
            .collect()
    }

    /// An id's `frame_info` (`[offset, pad, length]` each) and first `meta_data` element, as
    /// JSON text.
    fn meta_json(&self, id: &str) -> PyResult<String> {
        let v = self.dir.video(id).ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err(format!(
                "{}: no id {id:?}",
                self.dir.path().display()
            ))
        })?;
        let infos: Vec<[u64; 3]> = v
            .frame_infos()
            .iter()
            .map(|f| [f.offset, f.pad, f.length])
            .collect();
        let meta: Vec<&serde_json::Value> = v.meta().into_iter().collect();
        Ok(serde_json::json!({"frame_info": infos, "meta_data": meta}).to_string())
    }

    /// Frames `indices` (Python semantics: negative from the end) of `id`: decoded arrays
    /// (`H x W x 3` RGB, `H x W` gray) or, with `decode=False`, the JPEG bytes.
    #[pyo3(signature = (id, indices, decode=true))]
    fn read(
        &self,
        py: Python<'_>,
        id: &str,
        indices: Vec<i64>,
        decode: bool,
    ) -> PyResult<PyObject> {
        if self.dir.video(id).is_none() {
            return Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "{}: no id {id:?}",
                self.dir.path().display()
            )));
        }
        let frames = self
            .dir
            .frames(id, &FrameSelection::Indices(indices))
            .map_err(|e| pyo3::exceptions::PyIndexError::new_err(e.to_string()))?;
        if !decode {
            let list = PyList::new_bound(py, frames.iter().map(|f| PyBytes::new_bound(py, f)));
            return Ok(list.into_any().unbind());
        }
        let decoded = py.allow_threads(|| decode_all(&frames)).map_err(to_py)?;
        let mut out = Vec::with_capacity(decoded.len());
        for d in decoded {
            let a = d.pixels.into_pyarray_bound(py);
            // gulpio2 squeezes the channel axis of gray frames.
            let a = if d.channels == 1 {
                a.reshape([d.height, d.width])?.into_any()
            } else {
                a.reshape([d.height, d.width, d.channels])?.into_any()
            };
            out.push(a);
        }
        Ok(PyList::new_bound(py, out).into_any().unbind())
    }
}
