//! `NativeRemoteTrace`: a trace read in place on object storage (`s3://bucket/prefix/trace`,
//! the store's settings from the `AWS_*` variables), through `roverlog_core::remote` over
//! `roverlog_store`: one listing on open, each sensor's `meta.json` and `ts` when first
//! asked, a channel's index when it opens, then one range `GET` per sample. The Python half
//! (`roverlog/remote.py`) pickles it by URL; each process opens its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use roverlog_core::format::ChannelFormat;
use roverlog_core::remote::{RemoteChannel, RemoteError, RemoteSensor, RemoteTrace};
use roverlog_store::{Store, TraceOpenError};

use crate::Kind;

fn kind_of(e: &RemoteError) -> Kind {
    match e {
        RemoteError::NoTrace { .. } | RemoteError::Backend { .. } => Kind::File,
        RemoteError::NoSensor { .. } | RemoteError::NoChannel { .. } => Kind::MissingKey,
        RemoteError::PastEnd { .. } => Kind::SampleIndex,
        RemoteError::Damaged { .. } => Kind::Damaged,
        _ => Kind::Format,
    }
}

fn to_py(e: RemoteError) -> PyErr {
    kind_of(&e).err(e.to_string())
}

#[pyclass(frozen, module = "roverlog._roverlog")]
pub struct NativeRemoteTrace {
    trace: RemoteTrace,
    /// The store handle the trace reads through: its request counts, and one range read
    /// for a run of `raw` samples.
    store: Arc<Store>,
    sensors: Mutex<HashMap<String, Arc<RemoteSensor>>>,
    channels: Mutex<HashMap<(String, String), Arc<RemoteChannel>>>,
}

impl NativeRemoteTrace {
    fn sensor(&self, name: &str) -> Result<Arc<RemoteSensor>, RemoteError> {
        if let Some(s) = crate::lock(&self.sensors).get(name) {
            return Ok(s.clone());
        }
        let s = Arc::new(self.trace.sensor(name)?);
        crate::lock(&self.sensors).insert(name.to_string(), s.clone());
        Ok(s)
    }

    fn channel(&self, sensor: &str, name: &str) -> Result<Arc<RemoteChannel>, RemoteError> {
        let key = (sensor.to_string(), name.to_string());
        if let Some(c) = crate::lock(&self.channels).get(&key) {
            return Ok(c.clone());
        }
        let c = Arc::new(self.sensor(sensor)?.channel(name)?);
        crate::lock(&self.channels).insert(key, c.clone());
        Ok(c)
    }
}

impl NativeRemoteTrace {
    /// Samples `start .. start + count` of a `raw` channel, all held, in one range read
    /// (a whole IMU channel is one `GET`, not one a sample); `None` for another format, a
    /// single sample, or a run reaching past what the channel holds (read sample by sample,
    /// which names the damaged or missing one).
    fn raw_run(
        &self,
        sensor: &str,
        channel: &str,
        meta: &roverlog_core::format::ChannelMeta,
        c: &RemoteChannel,
        start: u64,
        count: u64,
    ) -> Result<Option<Vec<u8>>, RemoteError> {
        let s = meta.sample_bytes() as u64;
        let held = start.checked_add(count).is_some_and(|end| end <= c.len());
        if meta.format != ChannelFormat::Raw || count < 2 || s == 0 || !held {
            return Ok(None);
        }
        let key = format!("{sensor}/{channel}");
        let got = self
            .store
            .get_range(&key, start * s..(start + count) * s)
            .map_err(|e| RemoteError::Backend {
                location: format!("{}/{key}", self.trace.location()),
                error: Box::new(e),
            })?;
        if got.len() as u64 != count * s {
            // The object is shorter than when it was listed: the first sample it lacks.
            let held = start + got.len() as u64 / s;
            return Err(RemoteError::Damaged {
                file: format!("{}/{key}", self.trace.location()),
                index: held,
                damage: roverlog_core::remote::FrameDamage::NotHeld { held },
            });
        }
        Ok(Some(got))
    }
}

/// What `read` returns: the data, and the frame shape of decoded JPEG frames.
type Read = (PyObject, Option<(usize, usize, usize)>);

#[pymethods]
impl NativeRemoteTrace {
    #[new]
    fn new(py: Python<'_>, url: &str) -> PyResult<NativeRemoteTrace> {
        let opened = crate::gil::detach(py, || roverlog_store::open_trace(url));
        let (trace, store) = opened.map_err(|e| match e {
            TraceOpenError::Open(e) => Kind::File.err(e.to_string()),
            TraceOpenError::Read(e) => to_py(e),
        })?;
        Ok(NativeRemoteTrace {
            trace,
            store,
            sensors: Mutex::new(HashMap::new()),
            channels: Mutex::new(HashMap::new()),
        })
    }

    /// Where the trace is (`s3://bucket/prefix/trace at <endpoint>`).
    fn location(&self) -> String {
        self.trace.location()
    }

    /// The trace's file `path` (e.g. `_roverlog/events.jsonl`) whole, or `None` when there
    /// is no such file (at most 64 MiB).
    fn read_file<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let got = crate::gil::detach(py, || self.trace.read_file(path, 64 << 20)).map_err(to_py)?;
        Ok(got.map(|b| PyBytes::new_bound(py, &b)))
    }

    /// Every file of the trace (path relative to the trace) and its size in bytes, as listed
    /// when the trace opened (no request).
    fn files(&self) -> std::collections::BTreeMap<String, u64> {
        self.trace.files().clone()
    }

    /// The requests this process's handle on the trace made so far: `gets` (range reads),
    /// `got_bytes` (what they returned), `heads`, `lists`.
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.store.requests();
        let d = PyDict::new_bound(py);
        d.set_item("gets", r.gets)?;
        d.set_item("got_bytes", r.got_bytes)?;
        d.set_item("heads", r.heads)?;
        d.set_item("lists", r.lists)?;
        Ok(d)
    }

    /// Every sensor's name, virtual ones (`_name`) included, sorted.
    fn sensor_names(&self) -> Vec<String> {
        self.trace
            .all_sensor_names()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The sensor's `meta.json`, as JSON text.
    fn meta(&self, py: Python<'_>, sensor: &str) -> PyResult<String> {
        let s = crate::gil::detach(py, || self.sensor(sensor)).map_err(to_py)?;
        Ok(String::from_utf8_lossy(&s.meta().to_json_bytes()).into_owned())
    }

    /// The sensor's timestamps (float64 epoch seconds).
    fn timestamps<'py>(
        &self,
        py: Python<'py>,
        sensor: &str,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let s = crate::gil::detach(py, || self.sensor(sensor)).map_err(to_py)?;
        Ok(s.timestamps().to_vec().into_pyarray_bound(py))
    }

    /// Samples the channel holds.
    fn len(&self, py: Python<'_>, sensor: &str, channel: &str) -> PyResult<u64> {
        crate::gil::detach(py, || self.channel(sensor, channel).map(|c| c.len())).map_err(to_py)
    }

    /// `read(sensor, channel, start, count, decode)`, as `NativeChannel.read`: fixed-size
    /// channels give `(uint8 array, None)`; `jpg`/`mjpg` with `decode` give the RGB pixels and
    /// `(height, width, 3)`; others a list of bytes.
    #[pyo3(signature = (sensor, channel, start, count, decode=true))]
    fn read(
        &self,
        py: Python<'_>,
        sensor: &str,
        channel: &str,
        start: u64,
        count: u64,
        decode: bool,
    ) -> PyResult<Read> {
        let s = crate::gil::detach(py, || self.sensor(sensor)).map_err(to_py)?;
        let meta = s.meta().get(channel).cloned().ok_or_else(|| {
            to_py(RemoteError::NoChannel {
                location: self.trace.location(),
                sensor: sensor.to_string(),
                channel: channel.to_string(),
            })
        })?;
        let jpeg = matches!(meta.format, ChannelFormat::Mjpg)
            || meta.format == ChannelFormat::Blob("jpg".into());
        let got = crate::gil::detach(py, || -> Result<Vec<Vec<u8>>, RemoteError> {
            let c = self.channel(sensor, channel)?;
            if let Some(run) = self.raw_run(sensor, channel, &meta, &c, start, count)? {
                return Ok(vec![run]);
            }
            (start..start.saturating_add(count))
                .map(|i| c.get(i))
                .collect()
        })
        .map_err(to_py)?;
        if meta.format.is_fixed_size() {
            let v: Vec<u8> = got.concat();
            return Ok((v.into_pyarray_bound(py).into_any().unbind(), None));
        }
        if jpeg && decode {
            let mut shape = None;
            let mut out = Vec::new();
            for (k, b) in got.iter().enumerate() {
                let rgb = crate::gil::detach(py, || roverlog_core::format::avi::decode_rgb(b))
                    .map_err(|e| {
                        Kind::Damaged.err(format!(
                            "{}/{sensor}/{channel}: sample {}: {e}",
                            self.trace.location(),
                            start + k as u64
                        ))
                    })?;
                let frame = roverlog_core::jpeg::JpegFrame::open(
                    b,
                    roverlog_core::jpeg::DEFAULT_MAX_PIXELS,
                )
                .map(|f| (f.height(), f.width(), 3))
                .map_err(crate::to_py)?;
                if *shape.get_or_insert(frame) != frame {
                    return Err(Kind::Format.err(format!(
                        "{}/{sensor}/{channel}: frames of different sizes cannot share one array (read them one at a time, or decode=False)",
                        self.trace.location()
                    )));
                }
                out.extend(rgb);
            }
            let a: Bound<'_, PyArray1<u8>> = out.into_pyarray_bound(py);
            return Ok((a.into_any().unbind(), shape.or(Some((0, 0, 3)))));
        }
        let list = PyList::new_bound(py, got.iter().map(|f| PyBytes::new_bound(py, f)));
        Ok((list.into_any().unbind(), None))
    }
}

/// `find_traces(url)`: the traces at or below `s3://bucket/prefix` (directories holding
/// `config.yaml` or a sensor's `meta.json`), as URLs, sorted. One listing.
#[pyfunction]
pub fn find_traces(py: Python<'_>, url: &str) -> PyResult<Vec<String>> {
    let url = url.trim_end_matches('/');
    // Opening (`OpenError`) or listing (`StoreError`) the store: either is a FileError.
    let found = crate::gil::detach(
        py,
        || -> Result<Vec<String>, Box<dyn std::error::Error + Send + Sync>> {
            let store = roverlog_store::Store::open(url)?;
            Ok(roverlog_store::find_traces(&store)?)
        },
    )
    .map_err(|e| Kind::File.err(e.to_string()))?;
    Ok(found
        .into_iter()
        .map(|d| {
            if d.is_empty() {
                url.to_string()
            } else {
                format!("{url}/{d}")
            }
        })
        .collect())
}
