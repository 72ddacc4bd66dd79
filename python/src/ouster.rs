//! The native half of `roverlog.redrover.transforms.ouster`: the per-pixel table of an Ouster
//! `lidar.json` (`roverlog_core::ouster::XyzLut`), built once, and depth frames projected
//! with it to float32 points without the GIL.
//!
//! Frames come as numpy arrays of `(frames, beams, columns)` ranges in mm, `uint16` or
//! `uint32` (as the sensor's `rng` channel stores them) or `float32`/`float64`; the points
//! kept are upstream `PointCloud`'s (see `roverlog_core::ouster`), frame after frame,
//! zero-padded to the largest count.

use std::path::{Path, PathBuf};

use numpy::ndarray::Array3;
use numpy::{Element, IntoPyArray, PyArray1, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

use roverlog_core::ouster::{LidarIntrinsics, XyzLut};

use crate::{to_py, Kind};

/// `OusterLut(path)` or `OusterLut.from_json(text, name)`: the table of one `lidar.json`.
#[pyclass(frozen, module = "roverlog._roverlog")]
pub struct OusterLut {
    lut: XyzLut,
}

/// The points of each frame of `rng` (`frames x pixels`), padded, and their counts.
fn project_frames<T: Copy + Into<f64> + Sync>(
    lut: &XyzLut,
    rng: &[T],
    frames: usize,
    min_range: Option<f32>,
) -> roverlog_core::Result<(Vec<f32>, usize, Vec<i32>)> {
    let (beams, columns) = lut.shape();
    let pixels = beams * columns;
    if frames == 1 {
        // The common case (a sensor's sample): the points are the array, no copy.
        let mut out = Vec::new();
        lut.project(rng, min_range, &mut out)?;
        let n = out.len();
        return Ok((out.into_flattened(), n, vec![n as i32]));
    }
    let mut each = Vec::with_capacity(frames);
    for f in 0..frames {
        let mut out = Vec::new();
        lut.project(&rng[f * pixels..(f + 1) * pixels], min_range, &mut out)?;
        each.push(out);
    }
    let most = each.iter().map(Vec::len).max().unwrap_or(0);
    let mut padded = vec![0f32; frames * most * 3];
    for (f, pts) in each.iter().enumerate() {
        padded[f * most * 3..][..pts.len() * 3].copy_from_slice(pts.as_flattened());
    }
    let lengths = each.iter().map(|p| p.len() as i32).collect();
    Ok((padded, most, lengths))
}

impl OusterLut {
    fn project_typed<'py, T: Element + Copy + Into<f64> + Sync>(
        &self,
        py: Python<'py>,
        rng: &Bound<'py, PyAny>,
        min_range: Option<f32>,
    ) -> PyResult<(PyObject, PyObject)> {
        let rng: PyReadonlyArray3<'py, T> = rng.extract()?;
        let shape = rng.shape().to_vec();
        let (beams, columns) = self.lut.shape();
        if shape[1..] != [beams, columns] {
            return Err(Kind::Format.err(format!(
                "a depth frame of {} x {} pixels for a lidar of {beams} beams x {columns} columns",
                shape[1], shape[2]
            )));
        }
        let slice = rng
            .as_slice()
            .map_err(|_| Kind::Format.err("depth frames must be C-contiguous".into()))?;
        let frames = shape[0];
        let (points, most, lengths) =
            crate::gil::detach(py, || project_frames(&self.lut, slice, frames, min_range))
                .map_err(to_py)?;
        let xyz = Array3::from_shape_vec((frames, most, 3), points)
            .expect("frames x most x 3 values")
            .into_pyarray_bound(py);
        let lengths = PyArray1::from_vec_bound(py, lengths);
        Ok((xyz.into_any().unbind(), lengths.into_any().unbind()))
    }
}

#[pymethods]
impl OusterLut {
    /// The table of the `lidar.json` at `path`.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<OusterLut> {
        let lut = crate::gil::detach(py, || LidarIntrinsics::open(&path).map(|i| XyzLut::new(&i)))
            .map_err(to_py)?;
        Ok(OusterLut { lut })
    }

    /// The table of a `lidar.json`'s text; `name` names it in errors.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str, name: &str) -> PyResult<OusterLut> {
        let lut = crate::gil::detach(py, || {
            LidarIntrinsics::parse(Path::new(name), text.as_bytes()).map(|i| XyzLut::new(&i))
        })
        .map_err(to_py)?;
        Ok(OusterLut { lut })
    }

    /// `(beams, columns)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.lut.shape()
    }

    /// `project(rng, min_range)`: `rng` a C-contiguous `(frames, beams, columns)` array of
    /// `uint16`, `uint32`, `float32` or `float64` ranges (mm); returns `(xyz, length)`:
    /// float32 `(frames, n, 3)` points (m) zero-padded to the largest count `n`, and int32
    /// `(frames,)` counts.
    #[pyo3(signature = (rng, min_range=None))]
    fn project(
        &self,
        py: Python<'_>,
        rng: &Bound<'_, PyAny>,
        min_range: Option<f32>,
    ) -> PyResult<(PyObject, PyObject)> {
        let dtype: String = rng.getattr("dtype")?.getattr("str")?.extract()?;
        match dtype.as_str() {
            "<u2" => self.project_typed::<u16>(py, rng, min_range),
            "<u4" => self.project_typed::<u32>(py, rng, min_range),
            "<f4" => self.project_typed::<f32>(py, rng, min_range),
            "<f8" => self.project_typed::<f64>(py, rng, min_range),
            other => Err(Kind::Format.err(format!(
                "depth frames of dtype {other:?}: expected uint16, uint32, float32 or float64"
            ))),
        }
    }
}
