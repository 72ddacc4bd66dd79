//! `NativeChannel`: one channel of a sensor kept open by its Python `Channel` between reads.
//!
//! Opening a channel costs what the channel holds: a blob directory is listed, an `lzmaf`
//! index read, an AVI's frame list built. Opened on every access, one `channel[i]` on an
//! hour-long drive's 100,000-frame camera took 70-190 ms. So the reader is opened once and
//! kept; before each use a few `stat`s of the channel's files and of `ts` (sizes and
//! modification times) tell whether a trace still being recorded grew, and only then is it
//! opened again. A single read costs the same on a 100-sample channel as on a long one.
//! Threads that decode a range share the one open reader.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use roverlog_core::format::channel::channel_files;
use roverlog_core::format::{ChannelFormat, ChannelMeta, ChannelReader, Sensor};

use crate::{bind_to_py, lock, parallel_fill, to_py, BindError, Kind};

/// Size and modification time of each file a channel's length depends on.
type Stamp = Vec<Option<(u64, SystemTime)>>;

struct Open {
    reader: ChannelReader,
    len: u64,
    stamp: Stamp,
}

/// `NativeChannel(sensor_dir, channel)`: `len()`, and `read(start, count, decode)` as
/// described on [`NativeChannel::read`].
#[pyclass(frozen, module = "roverlog._roverlog")]
pub struct NativeChannel {
    dir: PathBuf,
    name: String,
    meta: ChannelMeta,
    /// The files whose stamp says whether the channel changed: its own and the sensor's `ts`.
    watched: Vec<PathBuf>,
    open: Mutex<Option<Open>>,
}

fn stamp(files: &[PathBuf]) -> Stamp {
    files
        .iter()
        .map(|f| {
            let m = std::fs::metadata(f).ok()?;
            Some((m.len(), m.modified().ok()?))
        })
        .collect()
}

impl NativeChannel {
    /// The channel's file or directory, as messages name it.
    fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// The open reader, (re)opened when the channel's files changed since it was opened.
    fn with_open<T, E: From<roverlog_core::Error>>(
        &self,
        f: impl FnOnce(&mut Open) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut guard = lock(&self.open);
        let now = stamp(&self.watched);
        if guard.as_ref().is_none_or(|o| o.stamp != now) {
            let mut reader = ChannelReader::open(&self.dir, &self.name, &self.meta)?;
            let len = reader.len()?;
            *guard = Some(Open {
                reader,
                len,
                stamp: now,
            });
        }
        f(guard.as_mut().expect("opened above"))
    }
}

#[pymethods]
impl NativeChannel {
    /// `NativeChannel(sensor_dir, channel, meta=None)`: the channel as the sensor's
    /// `meta.json` describes it, or, given `meta` (the JSON text of one `meta.json` entry),
    /// as that says: a channel opened by upstream's channel classes has no `meta.json`.
    #[new]
    #[pyo3(signature = (sensor_dir, channel, meta=None))]
    fn new(sensor_dir: PathBuf, channel: &str, meta: Option<&str>) -> PyResult<NativeChannel> {
        let meta = match meta {
            Some(entry) => crate::meta::entry_meta(&sensor_dir, channel, entry)?,
            None => {
                let sensor = Sensor::open(&sensor_dir).map_err(to_py)?;
                sensor.meta().get(channel).cloned().ok_or_else(|| {
                    Kind::MissingKey
                        .err(format!("{}: no channel {channel:?}", sensor_dir.display()))
                })?
            }
        };
        let mut watched = channel_files(&sensor_dir, channel, &meta);
        watched.push(sensor_dir.join("ts"));
        Ok(NativeChannel {
            dir: sensor_dir,
            name: channel.to_string(),
            meta,
            watched,
            open: Mutex::new(None),
        })
    }

    /// Samples the channel holds.
    fn len(&self, py: Python<'_>) -> PyResult<u64> {
        crate::gil::detach(py, || {
            self.with_open(|o| Ok::<_, roverlog_core::Error>(o.len))
        })
        .map_err(to_py)
    }

    /// `read(start, count, decode)`:
    /// - fixed-size channels (`raw`, `lzma`, `lzmaf`): `(uint8 array of count * sample bytes, None)`;
    /// - `jpg`/`mjpg` with `decode`: `(uint8 array of the RGB pixels, (height, width, 3))`;
    /// - otherwise (`npz`, or `decode=False`): `(list of bytes, None)`.
    #[pyo3(signature = (start, count, decode=true))]
    fn read(&self, py: Python<'_>, start: u64, count: u64, decode: bool) -> PyResult<Read> {
        let jpeg = matches!(self.meta.format, ChannelFormat::Mjpg)
            || self.meta.format == ChannelFormat::Blob("jpg".into());
        let what = if self.meta.format.is_fixed_size() {
            What::Fixed(self.meta.sample_bytes())
        } else if jpeg && decode {
            What::Pixels
        } else {
            What::Bytes
        };
        let got = crate::gil::detach(py, || {
            self.with_open(|o| {
                if start.checked_add(count).is_none_or(|end| end > o.len) {
                    // The first sample past the channel's length: damaged when `ts`
                    // counts it (the reader's error names it), else out of range.
                    return match o.reader.get(start.max(o.len)) {
                        Err(e @ roverlog_core::Error::DamagedSample { .. }) => Err(e.into()),
                        _ => Ok(Err(o.len)),
                    };
                }
                let (r, len) = (&mut o.reader, o.len);
                Ok(Ok(match what {
                    What::Fixed(per) => Got::Fixed(read_fixed(r, start, count, len, per)?),
                    What::Pixels => Got::Pixels(decode_frames(r, &self.path(), start, count)?),
                    What::Bytes => Got::Bytes(r.get_range(start..start + count)?),
                }))
            })
        });
        match got.map_err(bind_to_py)? {
            Err(len) => Err(Kind::SampleIndex.err(format!(
                "{}: samples {start}..{} out of range (channel holds {len})",
                self.path().display(),
                start.saturating_add(count)
            ))),
            Ok(Got::Fixed(v)) => Ok((v.into_pyarray_bound(py).into_any().unbind(), None)),
            Ok(Got::Pixels((v, [h, w, c]))) => {
                let a: Bound<'_, PyArray1<u8>> = v.into_pyarray_bound(py);
                Ok((a.into_any().unbind(), Some((h, w, c))))
            }
            Ok(Got::Bytes(frames)) => {
                let list = PyList::new_bound(py, frames.iter().map(|f| PyBytes::new_bound(py, f)));
                Ok((list.into_any().unbind(), None))
            }
        }
    }
}

/// What `read` returns: the data, and the frame shape of decoded JPEG frames.
type Read = (PyObject, Option<(usize, usize, usize)>);

enum What {
    Fixed(usize),
    Pixels,
    Bytes,
}

enum Got {
    Fixed(Vec<u8>),
    Pixels((Vec<u8>, [usize; 3])),
    Bytes(Vec<Vec<u8>>),
}

/// Samples `start .. start + count` of a fixed-size channel of `len` samples, decoded, back
/// to back.
fn read_fixed(
    r: &mut ChannelReader,
    start: u64,
    count: u64,
    len: u64,
    per: usize,
) -> Result<Vec<u8>, BindError> {
    let mut out = vec![0u8; count as usize * per];
    if let ChannelReader::Lzma(l) = r {
        // One stream for the whole file. A read of most of it decodes in order (no second
        // copy of the whole kept); a smaller one (one sample, a batch) decodes the file once
        // and keeps it with the open channel, so a random `ch[i]` costs the same at any index
        // (streaming to it decoded everything before it, every time: 109 ms per read on a
        // 100,000-sample channel, 0.16 ms on a 100-sample one).
        if count.saturating_mul(2) < len {
            l.bytes()?;
        }
        let mut pos = 0;
        r.visit(start..start + count, |_, b| {
            out[pos..pos + per].copy_from_slice(b);
            pos += per;
            Ok(())
        })?;
        return Ok(out);
    }
    let r: &ChannelReader = r;
    parallel_fill(start, count, per, &mut out, |range, chunk| {
        for (k, i) in range.enumerate() {
            chunk[k * per..(k + 1) * per].copy_from_slice(&shared(r, i)?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// Sample `i` of a reader every thread shares (never whole-file `lzma`: see `read_fixed`).
fn shared(r: &ChannelReader, i: u64) -> roverlog_core::Result<std::borrow::Cow<'_, [u8]>> {
    r.get_shared(i).unwrap_or_else(|| {
        Err(roverlog_core::Error::UnsupportedFormat {
            channel: format!("sample {i}"),
            format: "lzma read by several threads (a bug: read it in order)".into(),
        })
    })
}

/// Why sample `index` of the channel at `path` did not decode, naming both (the decoder's
/// message names neither).
fn in_sample(
    path: &Path,
    index: u64,
    bytes: &[u8],
    e: roverlog_core::Error,
) -> roverlog_core::Error {
    // A JPEG that does not decode is a damaged sample (naming `roverlog recover` when it cuts
    // it); anything else is said of the sample.
    match roverlog_core::format::bounds::undecodable_jpeg(path, index, bytes, e) {
        e @ roverlog_core::Error::DamagedSample { .. } => e,
        e => roverlog_core::Error::Corrupt {
            path: path.to_path_buf(),
            problem: roverlog_core::error::CorruptProblem::Sample {
                index,
                error: Box::new(e),
            },
        },
    }
}

/// Every JPEG of `range`, decoded to RGB on `threads::current()` threads: the pixels back
/// to back and the frame shape (all frames must share it). The shape comes from the first
/// frame's headers (no decode: a single read decodes its frame once), and colour frames
/// decode straight into their place in the output (no frame-sized buffer and copy per call).
fn decode_frames(
    r: &ChannelReader,
    path: &Path,
    start: u64,
    count: u64,
) -> Result<(Vec<u8>, [usize; 3]), BindError> {
    use roverlog_core::jpeg::{JpegFrame, DEFAULT_MAX_PIXELS};
    if count == 0 {
        return Ok((Vec::new(), [0, 0, 3]));
    }
    let into_rgb = |frame: JpegFrame<'_>, bytes: &[u8], dst: &mut [u8], i: u64| {
        if frame.channels() == 3 {
            return frame
                .decode_into(dst)
                .map_err(|e| in_sample(path, i, bytes, e));
        }
        // Grayscale: decoded to one channel, then each value repeated for R, G, B.
        let mut gray = vec![0u8; frame.len()];
        frame
            .decode_into(&mut gray)
            .map_err(|e| in_sample(path, i, bytes, e))?;
        for (px, &g) in dst.chunks_exact_mut(3).zip(&gray) {
            px.fill(g);
        }
        Ok(())
    };
    let bytes = shared(r, start)?;
    let first = JpegFrame::open(&bytes, DEFAULT_MAX_PIXELS)
        .map_err(|e| in_sample(path, start, &bytes, e))?;
    let shape = [first.height(), first.width(), 3];
    let per = shape.iter().product::<usize>();
    let mut out = vec![0u8; count as usize * per];
    if count == 1 {
        // A single read: the headers just parsed (Huffman tables built, a fixed cost that
        // dominates small frames) decode the frame; no second open.
        into_rgb(first, &bytes, &mut out, start)?;
        return Ok((out, shape));
    }
    drop(first);
    drop(bytes);
    parallel_fill(start, count, per, &mut out, |range, chunk| {
        for (k, i) in range.enumerate() {
            let bytes = shared(r, i)?;
            let dst = &mut chunk[k * per..(k + 1) * per];
            let frame = JpegFrame::open(&bytes, DEFAULT_MAX_PIXELS)
                .map_err(|e| in_sample(path, i, &bytes, e))?;
            let (h, w) = (frame.height(), frame.width());
            if h * w * 3 != per {
                return Err(BindError::FrameSizes {
                    path: path.to_path_buf(),
                    index: i,
                    got: h * w * 3,
                    first: start,
                    per,
                    height: shape[0],
                    width: shape[1],
                });
            }
            into_rgb(frame, &bytes, dst, i)?;
        }
        Ok(())
    })?;
    Ok((out, shape))
}
