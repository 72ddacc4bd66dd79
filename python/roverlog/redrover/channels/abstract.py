"""The channel base classes of upstream `roverd.channels.abstract`: `Channel` (reading over
roverlog's native readers, writing checks) and `BlobChannel` (a directory of one file per
sample)."""
import os
import threading
from functools import cached_property

import numpy as np

from ... import trace as _roverd
from ...errors import from_os_error, quoted, quoted_list
from .. import remote as _where
from .utils import Buffer, Prefetch, ReadableQueue

_INTERP = ("nearest", "linear", "cubic", "area", "lanczos")


class Channel:
    """One channel: `path` (its file or directory), `type` (numpy dtype), `shape` (per
    sample), `size` (bytes per sample). Opening one needs no `meta.json` beside it (the
    description is what the constructor was given) and no file yet (a channel about to be
    written). An `s3://` path reads in place (`roverlog.redrover.remote`)."""

    format = None

    def __init__(self, path, dtype, shape):
        self.path = os.fspath(path)
        self.type = np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.size = int(np.prod(self.shape) * self.type.itemsize)
        meta = {"format": self.format, "type": self.type.str[1:], "shape": list(self.shape)}
        if _where.is_url(self.path):
            self._channel = _where.channel(self.path, meta)
            return
        sensor_dir, name = os.path.split(self.path)
        # Copies for `raw` (writable=True): upstream's reads give arrays the caller owns
        # (`torch.from_numpy` needs them writable); `memmap()` is the zero-copy view.
        self._channel = _roverd.Channel(sensor_dir or ".", name, meta, writable=True)

    def __reduce__(self):
        return (_reopen, (type(self), self.path, self.type, self.shape, self._args()))

    def _args(self):
        return {}

    def open_like(self, path):
        """A channel of the same class, type and shape over another file."""
        return type(self)(path, self.type, self.shape, **self._args())

    def __repr__(self):
        return f"{type(self).__name__}({self.path}: {self.type} x {self.shape})"

    def __len__(self):
        return len(self._channel)

    @cached_property
    def filesize(self):
        """Bytes on disk (on object storage: as listed)."""
        if _where.is_url(self.path):
            return _where.size(self.path)
        try:
            return os.stat(self.path).st_size
        except OSError as e:
            raise from_os_error(e, self.path) from None

    def buffer_to_array(self, data, batch=True, final=True):
        """Bytes as `(n, *shape)` samples of this type (`batch=False`: exactly one sample)."""
        if isinstance(data, bytes):
            data = bytearray(data)
        arr = np.frombuffer(data, self.type).reshape(-1, *self.shape)
        if batch:
            return arr
        if arr.shape[0] != 1:
            raise ValueError(f"{self.path}: batch=False, but the buffer holds {arr.shape[0]} samples")
        return arr[0]

    def _span(self, start, samples):
        """`samples == -1` or past the end: up to the end. A start outside the channel is
        left for the reader to reject with the file's name."""
        n = len(self)
        start = int(start)
        if samples == -1:
            return start, n - start
        return start, min(int(samples), max(n - start, 0)) if start <= n else int(samples)

    def _decode(self, frames):
        return frames

    def read(self, start=0, samples=-1):
        """Samples `start .. start + samples` (-1: to the end; past the end: those that
        exist) as one array with a leading axis of the samples read."""
        start = int(start)
        if samples != -1 and start >= 0 and samples >= 0:
            # One native call (it checks the bounds against the files as they are now);
            # only a read past the end looks at the length and reads what exists.
            from ...errors import SampleIndexError

            try:
                native = self._channel._native()
                return self._decode(self._channel._from_native(*native.read(start, int(samples), True), int(samples)))
            except SampleIndexError:
                pass
        start, samples = self._span(start, samples)
        return self._decode(self._channel.read(start, samples))

    def __getitem__(self, index):
        """`read(index, 1)`: one sample, its leading axis kept."""
        return self.read(start=index, samples=1)

    def stream(self, transform=None, batch=0):
        """Samples in order (`batch=0`, without a leading axis) or arrays of `batch`."""
        for block in self._channel.stream(batch if batch > 0 else None):
            block = self._decode(block[None] if batch <= 0 else block)
            if batch <= 0:
                block = block[0]
            yield block if transform is None else transform(block)

    def to_dask(self, chunk=None):
        """The samples as a lazy `dask.array` chunked by samples (`roverlog.to_dask`; not in
        upstream)."""
        from ...lazy import to_dask

        return to_dask(self, chunk)

    def stream_prefetch(self, transform=None, size=64, batch=0):
        """`stream(...)` read ahead by a daemon thread into a queue of `size`."""
        return Prefetch(self.stream(transform=transform, batch=batch), size=size)

    # Writing, as upstream's classes write (see each class).

    def _verify_type(self, data):
        """An array (or the first of a list of them) must end in this channel's shape and be
        of its type; bytes are taken as already serialised."""
        if isinstance(data, (list, tuple)):
            if not data:
                return
            data = data[0]
        if not isinstance(data, np.ndarray):
            return
        if self.shape and tuple(data.shape[-len(self.shape):]) != self.shape:
            raise ValueError(f"{self.path}: data of shape {data.shape} does not end in the channel's shape {self.shape}")
        if data.dtype != self.type:
            raise ValueError(f"{self.path}: data of type {data.dtype}, the channel's type is {self.type}")

    def _serialize(self, data):
        """The bytes to write: arrays in C order, lists and tuples joined, bytes as given."""
        if isinstance(data, (list, tuple)):
            return b"".join(self._serialize(x) for x in data)
        if isinstance(data, np.ndarray):
            return np.ascontiguousarray(data).data
        return data

    def write(self, data, append=False):
        raise NotImplementedError(f"{self.path}: {type(self).__name__} has no write()")

    def consume(self, stream, thread=False):
        raise NotImplementedError(f"{self.path}: {type(self).__name__} has no consume()")


def _as_iterator(stream):
    """A queue read until `None` (`Buffer`), anything else as given."""
    return Buffer(stream) if isinstance(stream, ReadableQueue) else stream


def _in_thread(method, **kwargs):
    """Runs `method(**kwargs)` in a thread of its own (`consume(..., thread=True)`)."""
    threading.Thread(target=method, kwargs=kwargs).start()


class BlobChannel(Channel):
    """A directory of `000000.<ext>`, `000001.<ext>`, ... files, one per sample, read on
    the native library's threads (`workers` threads write them)."""

    ext = None

    def __init__(self, path, dtype, shape, workers=8, length=None):
        super().__init__(path, dtype, shape)
        self.workers = workers
        if length is not None:
            self._blobs = int(length)

    @property
    def _n_blobs(self):
        """Files written so far (where the next write starts): `length`, else the files in
        the directory, counted when first needed (reading never needs it: a long
        recording's directory is not listed to open it)."""
        if "_blobs" not in self.__dict__:
            try:
                self._blobs = len(os.listdir(self.path))
            except FileNotFoundError:
                self._blobs = 0
            except OSError as e:
                raise from_os_error(e, self.path) from None
        return self._blobs

    @_n_blobs.setter
    def _n_blobs(self, n):
        self._blobs = n

    @cached_property
    def filesize(self):
        if _where.is_url(self.path):
            return _where.size(self.path, tree=True)
        try:
            return sum(os.stat(os.path.join(self.path, p)).st_size for p in os.listdir(self.path))
        except OSError as e:
            raise from_os_error(e, self.path) from None

    def _filename(self, index):
        return os.path.join(self.path, "%06d" % index)

    def _write_blob(self, index, data):
        raise NotImplementedError

    def _write_checked(self, index, data):
        try:
            self._write_blob(index, data)
        except OSError as e:
            raise from_os_error(e, self._filename(index) + "." + self.ext) from None

    @_where.local_only
    def write(self, data, append=False):
        """Writes `(n, *shape)` samples as files `000000` .. (upstream: no `append`)."""
        if append:
            raise ValueError(f"{self.path}: a blob channel is written whole (append=True is not supported, as upstream)")
        if not isinstance(data, np.ndarray):
            raise ValueError(f"{self.path}: a blob channel writes arrays, not bytes")
        if data.ndim != len(self.shape) + 1:
            raise ValueError(f"{self.path}: data of shape {data.shape} is not a batch of the channel's shape {self.shape}")
        self._verify_type(data)
        self._makedirs()
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max(1, int(self.workers))) as pool:
            list(pool.map(lambda i: self._write_checked(i, data[i]), range(data.shape[0])))
        self._n_blobs = data.shape[0]

    @_where.local_only
    def consume(self, stream, thread=False, append=False):
        """Writes every sample of `stream` (one sample each, no batches) as the next file."""
        stream = _as_iterator(stream)
        if thread:
            return _in_thread(self.consume, stream=stream, append=append)
        if not append:
            self._n_blobs = 0
        self._makedirs()
        for frame in stream:
            if not isinstance(frame, np.ndarray):
                raise ValueError(f"{self.path}: a blob channel writes arrays, not bytes")
            if frame.ndim != len(self.shape):
                raise ValueError(f"{self.path}: consume() takes one sample at a time, got shape {frame.shape} for samples of {self.shape}")
            self._verify_type(frame)
            self._write_checked(self._n_blobs, frame)
            self._n_blobs += 1

    def _makedirs(self):
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as e:
            raise from_os_error(e, self.path) from None


class _Images(Channel):
    """Channels of JPEG frames, optionally resized on reading (OpenCV's `resize`)."""

    def _images_init(self, resolution, interp):
        if interp not in _INTERP:
            raise ValueError(f"{self.path}: interp must be one of {quoted_list(_INTERP)}, not {quoted(interp)}")
        self.resolution = None if resolution is None else tuple(resolution)
        self.interp = interp

    def _decode(self, frames):
        if self.resolution is None:
            return frames
        import cv2

        flag = getattr(cv2, "INTER_LANCZOS4" if self.interp == "lanczos" else "INTER_" + self.interp.upper())
        return np.stack([cv2.resize(f, self.resolution, interpolation=flag) for f in frames]) if len(frames) else frames


def _reopen(cls, path, dtype, shape, args):
    return cls(path, dtype, shape, **args)


__all__ = ["Channel", "BlobChannel"]
