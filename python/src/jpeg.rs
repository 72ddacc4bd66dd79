//! Which JPEG decoder reads frames: `set_jpeg_decoder` and `jpeg_decoder` over
//! `roverlog_core::jpeg`'s choice (libjpeg-turbo where it loads, else zune-jpeg;
//! `ROVERLOG_JPEG=auto|zune|turbo`).

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use roverlog_core::error::JpegProblem;
use roverlog_core::jpeg::{self, Backend};

fn to_py(e: roverlog_core::Error) -> PyErr {
    match e {
        roverlog_core::Error::Jpeg(p @ JpegProblem::TurboUnavailable { .. }) => {
            PyOSError::new_err(p.to_string())
        }
        e => PyValueError::new_err(e.to_string()),
    }
}

/// `set_jpeg_decoder(name)`: `"auto"` (libjpeg-turbo where it loads, else zune-jpeg),
/// `"zune"` or `"turbo"` (an `OSError` saying why where libjpeg-turbo does not load).
#[pyfunction]
pub(crate) fn set_jpeg_decoder(name: &str) -> PyResult<()> {
    jpeg::set_backend(Backend::parse(name).map_err(to_py)?).map_err(to_py)
}

/// `jpeg_decoder()`: `(chosen, used)`: the choice in force (`set_jpeg_decoder`'s, else
/// `ROVERLOG_JPEG`'s, else `"auto"`) and the decoder it means here, `"turbo"` or `"zune"`.
#[pyfunction]
pub(crate) fn jpeg_decoder() -> PyResult<(&'static str, &'static str)> {
    let chosen = jpeg::backend().map_err(to_py)?;
    Ok((chosen.name(), chosen.resolve().map_err(to_py)?.name()))
}
