//! Releasing and taking the GIL without aborting the process when Python shuts down.
//!
//! On Python before 3.14, a thread that asks for the GIL back while the interpreter is
//! finalizing (a daemon thread that was inside a read when the main thread ended) is ended
//! by `pthread_exit`. On Linux that is a forced unwind of the thread's stack; reaching the
//! `catch_unwind` that pyo3 wraps around every Rust function Python calls (and the one
//! around a Rust thread's body), it is caught and dropped, and glibc aborts the process:
//! `FATAL: exception not rethrown`, exit code 134.
//!
//! So the binding never releases the GIL with pyo3 0.22's `allow_threads` (whose
//! re-acquisition unwinds through frames that may not be unwound) nor takes it from a Rust
//! thread with `Python::with_gil`: [`detach`] and [`attach`] call CPython through
//! `extern "C-unwind"` declarations (a forced unwind may cross them) and hold a guard that,
//! if the thread is being ended, parks it for good instead: the thread stops where Python
//! 3.14 stops such threads (it hangs them), and the process exits with its own status.
//! pyo3 0.29 does the same inside `Python::detach` (PyO3 pull 6085).

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use pyo3::ffi::{PyGILState_STATE, PyThreadState};
use pyo3::Python;

// The same CPython functions pyo3's `ffi` declares as `extern "C"` (which may not unwind):
// declared here as `extern "C-unwind"`, the unwind `pthread_exit` starts in them is allowed to
// reach the guard below.
#[allow(clashing_extern_declarations)]
mod raw {
    use super::{PyGILState_STATE, PyThreadState};

    extern "C-unwind" {
        pub fn PyEval_SaveThread() -> *mut PyThreadState;
        pub fn PyEval_RestoreThread(tstate: *mut PyThreadState);
        pub fn PyGILState_Ensure() -> PyGILState_STATE;
        pub fn PyGILState_Release(state: PyGILState_STATE);
    }
}

/// Dropped only while CPython ends the thread (it is forgotten once the GIL is back): the
/// thread parks for good rather than let the unwind reach a `catch_unwind`.
struct ParkIfEnded;

impl Drop for ParkIfEnded {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // A Rust panic (not CPython ending the thread): let it go on.
            return;
        }
        loop {
            std::thread::park();
        }
    }
}

/// Takes the GIL back with `tstate`, or parks the thread for good when the interpreter is
/// finalizing.
fn restore(tstate: *mut PyThreadState) {
    let guard = ParkIfEnded;
    // SAFETY: `tstate` is this thread's state, saved by `PyEval_SaveThread` in `detach`.
    unsafe { raw::PyEval_RestoreThread(tstate) };
    std::mem::forget(guard);
}

/// `f()` with the GIL released (what `Python::allow_threads` is for: decoding on every core
/// while other Python threads run). `f` must not touch Python objects (the `Send` bounds keep
/// `Python` tokens and borrowed objects out) nor call `Python::with_gil`: it calls [`attach`].
/// A panic in `f` reaches the caller after the GIL is back.
pub(crate) fn detach<T, F>(_py: Python<'_>, f: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    // SAFETY: `_py` proves this thread holds the GIL; it gets it back in `restore` before
    // returning (or never returns, parked, when Python ends the thread).
    let tstate = unsafe { raw::PyEval_SaveThread() };
    let r = catch_unwind(AssertUnwindSafe(f));
    restore(tstate);
    r.unwrap_or_else(|p| resume_unwind(p))
}

/// `f(py)` holding the GIL, from any thread (a Rust thread, or code inside [`detach`]); the
/// thread parks for good instead if the interpreter is finalizing.
pub(crate) fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    let guard = ParkIfEnded;
    // SAFETY: balanced by the `PyGILState_Release` below, on every path that returns.
    let state = unsafe { raw::PyGILState_Ensure() };
    std::mem::forget(guard);
    // SAFETY: `PyGILState_Ensure` returned: this thread holds the GIL until released below.
    let r = catch_unwind(AssertUnwindSafe(|| {
        f(unsafe { Python::assume_gil_acquired() })
    }));
    // SAFETY: the state `PyGILState_Ensure` returned above, released once.
    unsafe { raw::PyGILState_Release(state) };
    r.unwrap_or_else(|p| resume_unwind(p))
}
