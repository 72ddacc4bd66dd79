//! The native half of `roverlog.gulp`: an opened GulpIO2 directory or single chunk (mapped) and
//! frames decoded on every core without the GIL.

use std::path::PathBuf;

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use roverlog_core::gulp::{FrameSelection, GulpDirectory, GulpOptions, JpegFrame};

use crate::{bind_to_py, joined, to_py, BindError, Kind};

#[pyclass(module = "roverlog._roverlog")]
pub struct GulpDir {
    dir: GulpDirectory,
}

/// Where one decoded frame lies in a block: byte offset, height, width, channels.
type Placed = (usize, usize, usize, usize);

/// Decodes `frames` into one buffer, frame after frame, on `threads::current()` threads;
/// an error names the frame by its place in `indices` (what the caller asked for) and `id`.
///
/// Every frame's headers are read first, so the buffer is allocated once, in this thread,
/// and each frame decodes straight into its place: no per-frame allocation, zeroing of fresh
/// pages or copy. Allocating and freeing (when Python drops the arrays) in the caller's
/// thread lets the allocator hand the same memory back on the next read, as it does for
/// the arrays gulpio2's decoder allocates.
fn decode_block(
    dir: &GulpDirectory,
    id: &str,
    indices: &[i64],
    frames: &[&[u8]],
) -> Result<(Vec<u8>, Vec<Placed>), BindError> {
    use std::mem::MaybeUninit;
    use std::sync::Mutex;

    // The gulp reader's messages name the directory; a decoder's name nothing.
    let in_frame = |k: usize, e: roverlog_core::Error| roverlog_core::Error::Gulp {
        path: dir.path().to_path_buf(),
        problem: Box::new(roverlog_core::error::GulpProblem::Frame {
            id: id.to_owned(),
            frame: indices[k],
            error: Box::new(e),
        }),
    };
    let opened = frames
        .iter()
        .enumerate()
        .map(|(k, f)| {
            JpegFrame::open(f, roverlog_core::jpeg::DEFAULT_MAX_PIXELS).map_err(|e| in_frame(k, e))
        })
        .collect::<roverlog_core::Result<Vec<_>>>()?;
    let mut placed = Vec::with_capacity(opened.len());
    let mut total = 0usize;
    for f in &opened {
        placed.push((total, f.height(), f.width(), f.channels()));
        total = total.checked_add(f.len()).ok_or(BindError::Overflow)?;
    }
    let mut block: Vec<u8> = Vec::new();
    block
        .try_reserve_exact(total)
        .map_err(|_| BindError::Alloc { bytes: total })?;
    // gulpio2's frames get numpy's huge-page hint; a read larger than malloc's mmap threshold
    // (32 MiB at most; 60 frames of 1080p are 373 MB) gets fresh memory each time.
    roverlog_core::mem::advise_huge_pages(block.spare_capacity_mut());
    // One job per frame, taken in order by whichever thread is free (frames differ in cost).
    let mut jobs = Vec::with_capacity(opened.len());
    let mut rest: &mut [MaybeUninit<u8>] = &mut block.spare_capacity_mut()[..total];
    for (k, f) in opened.into_iter().enumerate() {
        let (dst, tail) = rest.split_at_mut(f.len());
        rest = tail;
        jobs.push((k, f, dst));
    }
    let threads = crate::threads::current().min(jobs.len().max(1));
    let queue = Mutex::new(jobs.into_iter());
    let work = || -> Result<(), BindError> {
        loop {
            let Some((k, f, dst)) = queue.lock().unwrap().next() else {
                return Ok(());
            };
            // Zeroed here, while the frame's bytes are about to be in this core's cache
            // anyway, so that the decoder only ever sees initialised memory.
            for b in dst.iter_mut() {
                b.write(0);
            }
            // SAFETY: every byte of `dst` was initialised just above, and MaybeUninit<u8>
            // has the layout of u8; the slice borrows `block`'s spare capacity exclusively.
            let dst = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
            if let Err(e) = f.decode_into(dst) {
                // The read fails as a whole: the other threads need not decode the rest.
                queue.lock().unwrap().by_ref().for_each(drop);
                return Err(in_frame(k, e).into());
            }
        }
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mine = joined(std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)));
        helpers
            .into_iter()
            .map(|h| joined(h.join()))
            .fold(mine, |acc, r| acc.and(r))
    })?;
    // SAFETY: the jobs covered `block`'s first `total` bytes of spare capacity exactly, and
    // every job succeeded (an error returned above), so all `total` bytes are initialised.
    unsafe { block.set_len(total) };
    Ok((block, placed))
}

#[pymethods]
impl GulpDir {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<GulpDir> {
        let dir = crate::gil::detach(py, || GulpDirectory::open(&path)).map_err(to_py)?;
        Ok(GulpDir { dir })
    }

    /// One chunk pair from its two paths (gulpio2's `GulpChunk(data_file_path,
    /// meta_file_path)`); errors name the data file.
    #[staticmethod]
    fn chunk(py: Python<'_>, data: PathBuf, meta: PathBuf) -> PyResult<GulpDir> {
        let dir = crate::gil::detach(py, || {
            GulpDirectory::open_chunk(&data, &meta, &GulpOptions::default())
        })
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
            Kind::MissingKey.err(format!("{}: no id {id:?}", self.dir.path().display()))
        })?;
        let infos: Vec<[u64; 3]> = v
            .frame_infos()
            .iter()
            .map(|f| [f.offset, f.pad, f.length])
            .collect();
        let meta: Vec<&serde_json::Value> = v.meta().into_iter().collect();
        Ok(serde_json::json!({"frame_info": infos, "meta_data": meta}).to_string())
    }

    /// Frames `indices` (Python semantics: negative from the end) of `id`: decoded, a flat
    /// uint8 array of every frame one after the other and each frame's `(offset, height,
    /// width, channels)` in it (RGB: 3, gray: 1); with `decode=False`, a list of JPEG bytes.
    #[pyo3(signature = (id, indices, decode=true))]
    fn read(
        &self,
        py: Python<'_>,
        id: &str,
        indices: Vec<i64>,
        decode: bool,
    ) -> PyResult<PyObject> {
        if self.dir.video(id).is_none() {
            return Err(
                Kind::MissingKey.err(format!("{}: no id {id:?}", self.dir.path().display()))
            );
        }
        let frames = self
            .dir
            .frames(id, &FrameSelection::Indices(indices.clone()))
            .map_err(|e| Kind::SampleIndex.err(e.to_string()))?;
        if !decode {
            let list = PyList::new_bound(py, frames.iter().map(|f| PyBytes::new_bound(py, f)));
            return Ok(list.into_any().unbind());
        }
        // One array holds every frame; the Python half views each frame in it.
        let (block, placed) =
            crate::gil::detach(py, || decode_block(&self.dir, id, &indices, &frames))
                .map_err(bind_to_py)?;
        let block = block.into_pyarray_bound(py);
        Ok((block, placed).into_py(py))
    }
}
