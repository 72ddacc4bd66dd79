//! The native half of `roverlog.Driver`: a thin pyo3 wrapper over
//! [`roverlog_client::ResilientDriver`], which encodes frames from the samples' buffers (no
//! per-element Python work), coalesces them into writes of up to `max_bytes`, reconnects
//! with back-off and resends what the daemon did not receive (docs/protocol.md 6 and 7; its
//! module doc says what is retained, released and resent). What is Python's here: buffer
//! views, the GIL released around I/O, and a flusher thread that writes a batch that waited
//! `max_delay`. The Python half (`roverlog/driver.py`) turns what this reports into warnings:
//! a callback while the first connection waits, and the `recording` flag `send` returns.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use roverlog_client::{ResilientDriver, ResilientOptions, SidecarFile};
use roverlog_core::format::validate_name;
use roverlog_core::format::SensorMeta;

use crate::{client_to_py, lock, to_py, Kind};

struct Inner {
    driver: ResilientDriver,
    /// A failure of the flusher thread, raised by the next `send`.
    failed: Option<Arc<roverlog_client::Error>>,
    closed: bool,
}

/// A C-contiguous view of any object with the buffer protocol (bytes, numpy arrays, ...).
struct View(ffi::Py_buffer);

impl View {
    fn new(obj: &Bound<'_, PyAny>) -> PyResult<View> {
        let mut b = std::mem::MaybeUninit::<ffi::Py_buffer>::uninit();
        // SAFETY: a plain C-API call on a live object; on success it fills `b`, released in Drop.
        let r = unsafe {
            ffi::PyObject_GetBuffer(obj.as_ptr(), b.as_mut_ptr(), ffi::PyBUF_C_CONTIGUOUS)
        };
        if r == -1 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: initialised by the successful call above.
        Ok(View(unsafe { b.assume_init() }))
    }

    fn bytes(&self) -> &[u8] {
        if self.0.len == 0 {
            return &[];
        }
        // SAFETY: the exporter guarantees `len` readable bytes at `buf` while the view is held.
        unsafe { std::slice::from_raw_parts(self.0.buf as *const u8, self.0.len as usize) }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        // SAFETY: releases the view obtained in `new`, exactly once (needs the GIL: every View
        // lives inside a call that holds it).
        unsafe { ffi::PyBuffer_Release(&mut self.0) }
    }
}

#[pyclass(module = "roverlog._roverlog")]
pub struct NativeDriver {
    inner: Arc<Mutex<Inner>>,
    stop: Arc<AtomicBool>,
    flusher: Option<JoinHandle<()>>,
}

#[pymethods]
impl NativeDriver {
    /// `NativeDriver(socket, sensor, meta_json, seq, max_delay, max_bytes, max_retained,
    /// reconnect_timeout, connect_timeout, dedup, waiting, files)`: `meta_json` is a
    /// `meta.json`-style object of the data channels; `waiting(message)` is called once when
    /// the first connection has waited a second for the daemon (its exception ends the wait);
    /// `files` the sidecar files sent with every hello, `[(name, bytes)]` (protocol.md 2.6;
    /// `roverlog/driver.py` checks them, the daemon refuses what it does not take, naming it).
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (socket, sensor, meta_json, seq, max_delay, max_bytes, max_retained,
                        reconnect_timeout, connect_timeout=None, dedup=true, waiting=None,
                        files=Vec::new()))]
    fn new(
        py: Python<'_>,
        socket: PathBuf,
        sensor: String,
        meta_json: &str,
        seq: bool,
        max_delay: f64,
        max_bytes: usize,
        max_retained: usize,
        reconnect_timeout: f64,
        connect_timeout: Option<f64>,
        dedup: bool,
        waiting: Option<PyObject>,
        files: Vec<(String, Bound<'_, PyBytes>)>,
    ) -> PyResult<NativeDriver> {
        let meta = SensorMeta::parse(meta_json.as_bytes(), std::path::Path::new("<channels>"))
            .map_err(to_py)?;
        let timeout_ok = |t: f64| t.is_finite() && t >= 0.0;
        if !(max_delay.is_finite()
            && max_delay > 0.0
            && timeout_ok(reconnect_timeout)
            && connect_timeout.is_none_or(timeout_ok))
        {
            return Err(Kind::Format.err(format!(
                "max_delay must be positive, reconnect_timeout and connect_timeout finite and not negative (got {max_delay}, {reconnect_timeout}, {connect_timeout:?})"
            )));
        }
        let opts = ResilientOptions {
            max_bytes,
            max_retained,
            reconnect_timeout: Duration::from_secs_f64(reconnect_timeout),
            connect_timeout: connect_timeout.map(Duration::from_secs_f64),
            dedup,
            files: files
                .iter()
                .map(|(name, bytes)| SidecarFile::new(name.as_str(), bytes.as_bytes()))
                .collect(),
            ..ResilientOptions::default()
        };
        // The callback's own exception (a warning turned into an error) ends the wait.
        let mut raised: Option<PyErr> = None;
        let driver = crate::gil::detach(py, || {
            let mut notice = |e: &roverlog_client::Error| {
                let Some(cb) = &waiting else { return Ok(()) };
                let why = match e {
                    roverlog_client::Error::Io { error, .. } => error.to_string(),
                    e => e.to_string(),
                };
                let msg = format!(
                    "waiting for the roverlog daemon at {} ({why}); giving up after {:.1} s",
                    socket.display(),
                    opts.connect_timeout
                        .unwrap_or(opts.reconnect_timeout)
                        .as_secs_f64()
                );
                crate::gil::attach(|py| match cb.call1(py, (msg,)) {
                    Ok(_) => Ok(()),
                    Err(err) => {
                        raised = Some(err);
                        Err(roverlog_client::Error::WaitAborted)
                    }
                })
            };
            ResilientDriver::connect_notify(&socket, &sensor, meta, seq, &opts, &mut notice)
        });
        let driver = match (driver, raised) {
            (Ok(d), _) => d,
            (Err(_), Some(err)) => return Err(err),
            (Err(e), None) => return Err(client_to_py(e)),
        };
        let inner = Arc::new(Mutex::new(Inner {
            driver,
            failed: None,
            closed: false,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let delay = Duration::from_secs_f64(max_delay);
        let flusher = {
            let (inner, stop) = (inner.clone(), stop.clone());
            std::thread::spawn(move || {
                let tick = (delay / 2).max(Duration::from_micros(200));
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    let mut g = lock(&inner);
                    let due = g
                        .driver
                        .oldest_pending()
                        .is_some_and(|t| t.elapsed() >= delay);
                    if due && g.failed.is_none() {
                        if let Err(e) = g.driver.flush() {
                            g.failed = Some(Arc::new(e));
                        }
                    }
                }
            })
        };
        Ok(NativeDriver {
            inner,
            stop,
            flusher: Some(flusher),
        })
    }

    /// `send(ts, samples, seq=None)`: one sample, one buffer per data channel. Returns
    /// whether the daemon recorded at its last reply (false: the sample is discarded).
    #[pyo3(signature = (ts, samples, seq=None))]
    fn send(
        &self,
        py: Python<'_>,
        ts: f64,
        samples: Vec<Bound<'_, PyAny>>,
        seq: Option<u64>,
    ) -> PyResult<bool> {
        let views = samples
            .iter()
            .map(View::new)
            .collect::<PyResult<Vec<_>>>()?;
        let slices: Vec<&[u8]> = views.iter().map(View::bytes).collect();
        let mut g = lock(&self.inner);
        if g.closed {
            return Err(Kind::Format.err("the driver is closed".into()));
        }
        if let Some(f) = &g.failed {
            return Err(client_to_py(roverlog_client::Error::EarlierWriteFailed(
                f.clone(),
            )));
        }
        g.driver.push(ts, seq, &slices).map_err(client_to_py)?;
        drop(slices);
        drop(views);
        if g.driver.batch_full() {
            drop(g);
            return crate::gil::detach(py, || {
                let mut g = lock(&self.inner);
                g.driver.flush().map(|()| g.driver.recording())
            })
            .map_err(client_to_py);
        }
        Ok(g.driver.recording())
    }

    /// Writes what is buffered.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        crate::gil::detach(py, || lock(&self.inner).driver.flush()).map_err(client_to_py)
    }

    /// Flushes and asks for durability: `(durable, reason)`, the sensor's samples the
    /// daemon has on disk and, when it records nothing, why the samples were discarded.
    fn sync(&self, py: Python<'_>) -> PyResult<(u64, Option<String>)> {
        crate::gil::detach(py, || {
            let mut g = lock(&self.inner);
            g.driver
                .sync_reply()
                .map(|d| (d.durable, g.driver.not_recording()))
        })
        .map_err(client_to_py)
    }

    /// Whether the daemon recorded at its last reply.
    #[getter]
    fn recording(&self) -> bool {
        lock(&self.inner).driver.recording()
    }

    /// While the daemon records nothing: why, and what happens to the samples.
    #[getter]
    fn not_recording(&self) -> Option<String> {
        lock(&self.inner).driver.not_recording()
    }

    /// Frames sent (handed to `send`) on this driver.
    #[getter]
    fn sent(&self) -> u64 {
        lock(&self.inner).driver.sent()
    }

    /// The last durable count the daemon reported.
    #[getter]
    fn durable(&self) -> u64 {
        lock(&self.inner).driver.durable()
    }

    /// Whether the daemon took the sidecar files at the last hello (false without files, or
    /// from a daemon that predates them: then they are not in the trace).
    #[getter]
    fn files_taken(&self) -> bool {
        lock(&self.inner).driver.files_taken()
    }

    /// The trace the daemon records into.
    #[getter]
    fn trace(&self) -> String {
        lock(&self.inner).driver.trace().to_string()
    }

    /// Flushes (and syncs when asked), stops the flusher and closes the connection.
    #[pyo3(signature = (sync=false))]
    fn close(&mut self, py: Python<'_>, sync: bool) -> PyResult<()> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.flusher.take() {
            crate::gil::detach(py, || h.join())
                .map_err(|_| Kind::Format.err("the flusher thread panicked".into()))?;
        }
        let r = crate::gil::detach(py, || {
            let mut g = lock(&self.inner);
            if g.closed {
                return Ok(());
            }
            let r = if sync {
                g.driver.sync().map(|_| ())
            } else {
                g.driver.flush()
            };
            g.closed = true;
            g.driver.disconnect();
            r
        });
        r.map_err(client_to_py)
    }
}

impl Drop for NativeDriver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
    }
}

/// `check_file_name(name)`: refuses (as `roverlog.FormatError`, core's words) a sidecar file
/// name the daemon would refuse by its name alone (docs/protocol.md 2.6): the rule is core's
/// `validate_name("file", ...)`, which the daemon applies too, so Python does not copy it.
#[pyfunction]
pub(crate) fn check_file_name(name: &str) -> PyResult<()> {
    validate_name("file", name).map_err(to_py)
}
