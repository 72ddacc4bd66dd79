//! The native half of `roverlog.Driver`: frames encoded from the samples' buffers (no
//! per-element Python work), coalesced into large writes bounded by `max_delay` (a flusher
//! thread writes a batch that waited that long) and `max_bytes`, and reconnection with
//! back-off that resends what the daemon did not receive (docs/protocol.md 6 and 7).
//!
//! Every frame sent stays in memory until the daemon acknowledges it as durable (`sync`), up
//! to `max_retained` bytes: after a reconnect the hello reply says how many samples the
//! daemon has, and the frames after those are sent again. Frames dropped from a full retain
//! buffer that the daemon then turns out not to have are reported, never silently lost.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::ffi;
use pyo3::prelude::*;

use roverlog_client::driver::{self as client, encode_frame, is_daemon_gone, sample_sizes};
use roverlog_core::format::SensorMeta;

use crate::{to_py, Error};

struct Inner {
    socket: PathBuf,
    sensor: String,
    meta: SensorMeta,
    seq: bool,
    sizes: Vec<Option<usize>>,
    conn: Option<client::Driver>,
    trace: String,
    /// The daemon's sample count of the sensor minus our frame index (the samples it had
    /// before our first frame; after a switch to a new trace, minus the frames resent).
    base: i64,
    /// Frames handed to `send`.
    sent: u64,
    /// Frames encoded but not yet written, and since when the oldest waits.
    pending: Vec<u8>,
    pending_frames: u64,
    pending_since: Option<Instant>,
    /// Frames not yet acknowledged durable: `kept` holds frames `kept_first ..` back to back,
    /// `kept_ends` their end offsets.
    kept: Vec<u8>,
    kept_ends: std::collections::VecDeque<usize>,
    kept_first: u64,
    durable: u64,
    max_bytes: usize,
    max_retained: usize,
    reconnect_timeout: Duration,
    /// A failure of the flusher thread, raised by the next call.
    failed: Option<String>,
    closed: bool,
}

fn err(msg: impl Into<String>) -> roverlog_core::Error {
    roverlog_core::Error::Protocol(msg.into())
}

impl Inner {
    fn connect(&mut self) -> roverlog_core::Result<()> {
        let t0 = Instant::now();
        let mut backoff = Duration::from_millis(20);
        loop {
            match client::Driver::connect(&self.socket, &self.sensor, &self.meta, self.seq) {
                Ok((d, hello)) => return self.resume(d, hello),
                Err(e) if is_daemon_gone(&e) && t0.elapsed() < self.reconnect_timeout => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A fresh connection: resend what the daemon does not have.
    fn resume(
        &mut self,
        mut d: client::Driver,
        hello: client::HelloReply,
    ) -> roverlog_core::Result<()> {
        let first = self.conn.is_none() && self.trace.is_empty();
        let samples = hello.samples as i64;
        if first {
            self.base = samples;
            self.durable = hello.samples;
        } else if hello.trace != self.trace {
            // A new trace holds none of ours: every frame not acknowledged durable goes there
            // (the old trace may also have kept some of them: better twice than lost).
            self.base = samples - self.kept_first as i64;
        }
        self.trace = hello.trace;
        let have = u64::try_from(samples - self.base).map_err(|_| {
            err(format!(
                "sensor {:?}: the daemon reports {} samples, fewer than it had when we started",
                self.sensor, hello.samples
            ))
        })?;
        if have > self.sent {
            return Err(err(format!(
                "sensor {:?}: the daemon holds {} samples of ours but we sent {}",
                self.sensor, have, self.sent
            )));
        }
        if have < self.kept_first {
            return Err(err(format!(
                "sensor {:?}: the daemon lost samples {have}..{} which were no longer retained (raise max_retained or sync more often)",
                self.sensor, self.kept_first
            )));
        }
        let from = (have - self.kept_first) as usize;
        let start = if from == 0 {
            0
        } else {
            self.kept_ends[from - 1]
        };
        if start < self.kept.len() {
            d.send_encoded(&self.kept[start..], self.sent - have)?;
        }
        self.pending.clear();
        self.pending_frames = 0;
        self.pending_since = None;
        self.conn = Some(d);
        Ok(())
    }

    fn flush(&mut self) -> roverlog_core::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.conn.is_none() {
            return self.connect();
        }
        let r = self
            .conn
            .as_mut()
            .expect("connected")
            .send_encoded(&self.pending, self.pending_frames);
        match r {
            Ok(()) => {
                self.pending.clear();
                self.pending_frames = 0;
                self.pending_since = None;
                Ok(())
            }
            Err(e) if is_daemon_gone(&e) => {
                self.conn = None;
                self.connect()
            }
            Err(e) => Err(e),
        }
    }

    fn sync(&mut self) -> roverlog_core::Result<u64> {
        loop {
            self.flush()?;
            if self.conn.is_none() {
                self.connect()?;
            }
            match self.conn.as_mut().expect("connected").sync() {
                Ok(n) => {
                    self.durable = n;
                    self.trim(u64::try_from(n as i64 - self.base).unwrap_or(0));
                    return Ok(n);
                }
                Err(e) if is_daemon_gone(&e) => self.conn = None,
                Err(e) => return Err(e),
            }
        }
    }

    /// Forgets frames before `upto` (acknowledged durable).
    fn trim(&mut self, upto: u64) {
        let n = upto
            .saturating_sub(self.kept_first)
            .min(self.kept_ends.len() as u64) as usize;
        if n == 0 {
            return;
        }
        let cut = self.kept_ends[n - 1];
        self.kept.drain(..cut);
        self.kept_ends.drain(..n);
        for e in self.kept_ends.iter_mut() {
            *e -= cut;
        }
        self.kept_first += n as u64;
    }

    fn push(&mut self, ts: f64, seq: Option<u64>, samples: &[&[u8]]) -> roverlog_core::Result<()> {
        if let Some(f) = &self.failed {
            return Err(err(format!("an earlier write failed: {f}")));
        }
        let seq = self.seq.then(|| seq.unwrap_or(self.sent));
        let at = self.pending.len();
        encode_frame(&mut self.pending, &self.sizes, ts, seq, samples)
            .map_err(|m| err(format!("sensor {:?}: {m}", self.sensor)))?;
        let frame = &self.pending[at..];
        self.kept.extend_from_slice(frame);
        self.kept_ends.push_back(self.kept.len());
        // A full retain buffer forgets its oldest frames (reported if a reconnect needs them).
        while self.kept.len() > self.max_retained && self.kept_ends.len() > 1 {
            self.trim(self.kept_first + 1);
        }
        self.pending_frames += 1;
        self.pending_since.get_or_insert_with(Instant::now);
        self.sent += 1;
        Ok(())
    }
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

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[pymethods]
impl NativeDriver {
    /// `NativeDriver(socket, sensor, meta_json, seq, max_delay, max_bytes, max_retained,
    /// reconnect_timeout)`: `meta_json` is a `meta.json`-style object of the data channels.
    #[new]
    #[allow(clippy::too_many_arguments)]
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
    ) -> PyResult<NativeDriver> {
        let meta = SensorMeta::parse(meta_json.as_bytes(), std::path::Path::new("<channels>"))
            .map_err(to_py)?;
        if !(max_delay.is_finite() && max_delay > 0.0 && reconnect_timeout >= 0.0) {
            return Err(Error::new_err(format!(
                "max_delay must be positive and reconnect_timeout not negative (got {max_delay}, {reconnect_timeout})"
            )));
        }
        let mut inner = Inner {
            socket,
            sensor,
            sizes: sample_sizes(&meta),
            meta,
            seq,
            conn: None,
            trace: String::new(),
            base: 0,
            sent: 0,
            pending: Vec::new(),
            pending_frames: 0,
            pending_since: None,
            kept: Vec::new(),
            kept_ends: Default::default(),
            kept_first: 0,
            durable: 0,
            max_bytes: max_bytes.max(1),
            max_retained,
            reconnect_timeout: Duration::from_secs_f64(reconnect_timeout),
            failed: None,
            closed: false,
        };
        py.allow_threads(|| inner.connect()).map_err(to_py)?;
        let inner = Arc::new(Mutex::new(inner));
        let stop = Arc::new(AtomicBool::new(false));
        let delay = Duration::from_secs_f64(max_delay);
        let flusher = {
            let (inner, stop) = (inner.clone(), stop.clone());
            std::thread::spawn(move || {
                let tick = (delay / 2).max(Duration::from_micros(200));
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    let mut g = lock(&inner);
                    let due = g.pending_since.is_some_and(|t| t.elapsed() >= delay);
                    if due && g.failed.is_none() {
                        if let Err(e) = g.flush() {
                            g.failed = Some(e.to_string());
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

    /// `send(ts, samples, seq=None)`: one sample, one buffer per data channel.
    #[pyo3(signature = (ts, samples, seq=None))]
    fn send(
        &self,
        py: Python<'_>,
        ts: f64,
        samples: Vec<Bound<'_, PyAny>>,
        seq: Option<u64>,
    ) -> PyResult<()> {
        let views = samples
            .iter()
            .map(View::new)
            .collect::<PyResult<Vec<_>>>()?;
        let slices: Vec<&[u8]> = views.iter().map(View::bytes).collect();
        let mut g = lock(&self.inner);
        if g.closed {
            return Err(Error::new_err("the driver is closed"));
        }
        g.push(ts, seq, &slices).map_err(to_py)?;
        drop(slices);
        drop(views);
        if g.pending.len() >= g.max_bytes {
            drop(g);
            py.allow_threads(|| lock(&self.inner).flush())
                .map_err(to_py)?;
        }
        Ok(())
    }

    /// Writes what is buffered.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| lock(&self.inner).flush())
            .map_err(to_py)
    }

    /// Flushes and asks for durability: the sensor's samples the daemon has on disk.
    fn sync(&self, py: Python<'_>) -> PyResult<u64> {
        py.allow_threads(|| lock(&self.inner).sync()).map_err(to_py)
    }

    /// Frames sent (handed to `send`) on this driver.
    #[getter]
    fn sent(&self) -> u64 {
        lock(&self.inner).sent
    }

    /// The last durable count the daemon reported.
    #[getter]
    fn durable(&self) -> u64 {
        lock(&self.inner).durable
    }

    /// The trace the daemon records into.
    #[getter]
    fn trace(&self) -> String {
        lock(&self.inner).trace.clone()
    }

    /// Flushes (and syncs when asked), stops the flusher and closes the connection.
    #[pyo3(signature = (sync=false))]
    fn close(&mut self, py: Python<'_>, sync: bool) -> PyResult<()> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.flusher.take() {
            py.allow_threads(|| h.join())
                .map_err(|_| Error::new_err("the flusher thread panicked"))?;
        }
        let r = py.allow_threads(|| {
            let mut g = lock(&self.inner);
            if g.closed {
                return Ok(());
            }
            let r = if sync {
                g.sync().map(|_| ())
            } else {
                g.flush()
            };
            g.closed = true;
            g.conn = None;
            r
        });
        r.map_err(to_py)
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
