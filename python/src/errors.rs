//! Library errors as the Python classes of `roverlog.errors`.
//!
//! The classes are defined in Python (`roverlog/errors.py`): each is a `roverlog.Error` and
//! also the builtin a caller would catch (`FileNotFoundError`, `OSError`, `KeyError`,
//! `IndexError`, `ValueError`), and Python allows those several bases where a class made
//! here with `create_exception!` would get one. The message is the library's, which already
//! names the file; the callers add the channel and sample where the library cannot know them.

use pyo3::prelude::*;
use pyo3::types::PyType;

/// Which class of `roverlog.errors` an error is raised as.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `FileError` (`FileNotFoundError`): missing, or a file where a directory was expected.
    File,
    /// `ReadError` (`OSError`): any other I/O error.
    Read,
    /// `MissingKeyError` (`KeyError`): no channel, sensor or id of that name.
    MissingKey,
    /// `SampleIndexError` (`IndexError`): past the end.
    SampleIndex,
    /// `FormatError` (`ValueError`): corrupt, inconsistent or unsupported data.
    Format,
    /// `DamagedSampleError` (a `FormatError`): a sample the sensor counts whose bytes are
    /// missing, cut or do not decode.
    Damaged,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::File => "FileError",
            Kind::Read => "ReadError",
            Kind::MissingKey => "MissingKeyError",
            Kind::SampleIndex => "SampleIndexError",
            Kind::Format => "FormatError",
            Kind::Damaged => "DamagedSampleError",
        }
    }

    /// The class for a library error.
    pub(crate) fn of(e: &roverlog_core::Error) -> Kind {
        use std::io::ErrorKind as Io;
        match e {
            roverlog_core::Error::Io { error, .. } => match error.kind() {
                Io::NotFound | Io::NotADirectory | Io::IsADirectory => Kind::File,
                _ => Kind::Read,
            },
            roverlog_core::Error::OutOfRange { .. } => Kind::SampleIndex,
            roverlog_core::Error::DamagedSample { .. } => Kind::Damaged,
            // A directory expected (a blob channel's, a trace's) that is missing or a file.
            roverlog_core::Error::NotA { path, .. } if !path.is_dir() => Kind::File,
            _ => Kind::Format,
        }
    }

    /// The class for an error of the daemon client (the driver): its I/O errors and an
    /// absent daemon as for files, the dataset's errors as [`Kind::of`], the rest `Format`.
    pub(crate) fn of_client(e: &roverlog_client::Error) -> Kind {
        use roverlog_client::Error;
        use std::io::ErrorKind as Io;
        match e {
            Error::Core(e) => Kind::of(e),
            Error::Io { error, .. } => match error.kind() {
                Io::NotFound | Io::NotADirectory | Io::IsADirectory => Kind::File,
                _ => Kind::Read,
            },
            Error::NoDaemon { missing: true, .. } => Kind::File,
            Error::NoDaemon { .. } => Kind::Read,
            _ => Kind::Format,
        }
    }

    /// The Python exception of this kind with message `msg`.
    pub(crate) fn err(self, msg: String) -> PyErr {
        self.err_with(msg, None)
    }

    /// The Python exception of this kind: `(msg,)`, or `(msg, path, index)` for a damaged
    /// sample (its `path` and `index` attributes).
    fn err_with(self, msg: String, sample: Option<(String, u64)>) -> PyErr {
        Python::with_gil(|py| {
            let class = py
                .import_bound("roverlog.errors")
                .and_then(|m| m.getattr(self.class_name()))
                .and_then(|c| Ok(c.downcast_into::<PyType>()?));
            match class {
                Ok(class) => match sample {
                    Some((path, index)) => PyErr::from_type_bound(class, (msg, path, index)),
                    None => PyErr::from_type_bound(class, (msg,)),
                },
                // Only when the package's Python half is missing or broken: say so.
                Err(e) => e,
            }
        })
    }
}

/// A library error as the `roverlog.errors` class of its kind, with the library's message.
pub(crate) fn to_py(e: roverlog_core::Error) -> PyErr {
    let sample = match &e {
        roverlog_core::Error::DamagedSample { path, index, .. } => {
            Some((path.to_string_lossy().into_owned(), *index))
        }
        _ => None,
    };
    Kind::of(&e).err_with(e.to_string(), sample)
}

/// A daemon client's error as the `roverlog.errors` class of its kind ([`Kind::of_client`]).
pub(crate) fn client_to_py(e: roverlog_client::Error) -> PyErr {
    match e {
        roverlog_client::Error::Core(e) => to_py(e),
        e => Kind::of_client(&e).err(e.to_string()),
    }
}

/// What the binding itself refuses while building an array (not a library error); the
/// library's errors pass through ([`BindError::Core`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BindError {
    #[error(transparent)]
    Core(#[from] roverlog_core::Error),
    /// A decoding thread panicked (a decoder bug): its panic message.
    #[error("decoder: a decoding thread panicked: {why}")]
    Panicked { why: String },
    /// Frame `index` of a channel decodes to another size than frame `first`.
    #[error("jpeg: {}: frame {index} decodes to {got} bytes, frame {first} to {per} ({height}x{width}x3): frames of different sizes cannot share one array (read them one at a time, or decode=False)", path.display())]
    FrameSizes {
        path: std::path::PathBuf,
        index: u64,
        got: usize,
        first: u64,
        per: usize,
        height: usize,
        width: usize,
    },
    /// Decoded frames larger together than the address space.
    #[error("jpeg: decoded frames overflow the address space")]
    Overflow,
    /// No memory for the decoded frames.
    #[error("jpeg: cannot allocate {bytes} bytes for the decoded frames")]
    Alloc { bytes: usize },
}

/// A [`BindError`] as Python's exception: the library's errors by [`to_py`], the binding's
/// own as `roverlog.FormatError`.
pub(crate) fn bind_to_py(e: BindError) -> PyErr {
    match e {
        BindError::Core(e) => to_py(e),
        e => Kind::Format.err(e.to_string()),
    }
}
