//! How many threads one bulk read (a range of frames or samples, a gulp read, zarr rows)
//! decodes on.
//!
//! By default a read uses every core: right for one process reading. A `DataLoader` with
//! eight workers on eight cores would otherwise start 64 decoding threads that fight for the
//! cores, so a process that is a worker (a `multiprocessing` child, told by the Python half
//! at import, or a process forked after the package was imported) reads on one thread
//! unless told otherwise. `set_threads` (and `ROVERLOG_THREADS`, read by the Python half at
//! import) overrides both, and a forked child inherits what its parent set.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The count `set_threads` chose; 0: automatic.
static CHOSEN: AtomicUsize = AtomicUsize::new(0);
/// Set in a `multiprocessing` child: automatic means one thread.
static WORKER: AtomicBool = AtomicBool::new(false);
/// The process that imported the module: in any other (a fork), automatic means one thread.
static IMPORTER: AtomicU32 = AtomicU32::new(0);

/// Remembers the importing process (called once, when the module is created).
pub(crate) fn init() {
    IMPORTER.store(std::process::id(), Ordering::Relaxed);
}

/// The count `set_threads` chose, if any.
pub(crate) fn chosen() -> Option<usize> {
    match CHOSEN.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// Threads a bulk read uses: the chosen count, else 1 in a worker, else one per core.
pub(crate) fn current() -> usize {
    chosen().unwrap_or_else(|| {
        let forked = IMPORTER.load(Ordering::Relaxed) != std::process::id();
        if WORKER.load(Ordering::Relaxed) || forked {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    })
}

/// `set_threads(n)`: bulk reads use `n` threads (at least 1); `None`: automatic again.
#[pyfunction]
#[pyo3(signature = (n))]
pub(crate) fn set_threads(n: Option<usize>) -> PyResult<()> {
    match n {
        Some(0) => Err(PyValueError::new_err(
            "set_threads: at least 1 thread (None: one per core, one in a worker process)",
        )),
        n => {
            CHOSEN.store(n.unwrap_or(0), Ordering::Relaxed);
            Ok(())
        }
    }
}

/// `threads()`: how many threads the next bulk read uses.
#[pyfunction]
pub(crate) fn threads() -> usize {
    current()
}

/// `_mark_worker()`: this process is a `multiprocessing` child (automatic: one thread).
#[pyfunction]
pub(crate) fn _mark_worker() {
    WORKER.store(true, Ordering::Relaxed);
}
