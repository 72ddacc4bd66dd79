"""Channels with upstream `roverd.channels`' classes and reading methods, over roverlog's
native readers (`roverlog.roverd.Channel`): `lzma`/`lzmaf` frames and JPEG frames decode in
the native library on every core with the GIL released, `raw` channels read from the mapped
file.

- `from_config(path, format, type, shape, desc=None, args={})` opens a channel by its
  `meta.json` entry; `CHANNEL_TYPES` maps each format to its class.
- `channel.read(start=0, samples=-1)`: `(samples, *shape)` (JPEG: `(samples, H, W, 3)` RGB),
  a writable array the caller owns, as upstream's; `channel[i]` is `read(i, 1)` (leading
  axis kept, as upstream); `stream(transform=None, batch=0)`, `stream_prefetch(...)`;
  `filesize`, `size` (bytes per sample), `type` (a numpy dtype), `shape`, `path`;
  `RawChannel.memmap()`.

Reading only: `write`/`consume` raise `NotImplementedError` (traces are written by the
roverlog daemon and `roverlog.Driver`). Where upstream reads past the end, ours gives the
samples that exist (as upstream's `lzma`, `lzmaf` and video channels do); a start outside the
channel is a `roverlog.SampleIndexError` (an `IndexError`) naming the file.
Upstream's video channel returns frame `start - 1` for a read starting at `start > 0` (it
seeks OpenCV to `start - 1`); ours returns frame `start`, the one whose timestamp is `ts[start]`.
"""
import os
import queue
import threading
from functools import cached_property

import numpy as np

from .. import roverd as _roverd
from ..errors import FormatError, SampleIndexError, from_os_error, quoted, quoted_list

_INTERP = ("nearest", "linear", "cubic", "area", "lanczos")


class Channel:
    """One channel of a sensor: `path` (its file or directory), `type` (numpy dtype),
    `shape` (per sample), `size` (bytes per sample)."""

    format = None

    def __init__(self, path, dtype, shape):
        self.path = os.fspath(path)
        self.type = np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.size = int(np.prod(self.shape) * self.type.itemsize)
        sensor_dir, name = os.path.split(self.path)
        meta = {"format": self.format, "type": self.type.str[1:], "shape": list(self.shape)}
        # Copies for `raw` (writable=True): upstream's reads give arrays the caller owns
        # (`torch.from_numpy` needs them writable); `memmap()` is the zero-copy view.
        self._channel = _roverd.Channel(sensor_dir, name, meta, writable=True)

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
        """Bytes on disk."""
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

    def stream_prefetch(self, transform=None, size=64, batch=0):
        """`stream(...)` read ahead by a thread into a queue of `size`."""
        return _Prefetch(self.stream(transform=transform, batch=batch), size)

    def write(self, data, append=False):
        raise NotImplementedError(f"{self.path}: roverlog.redrover reads traces; write them with the roverlog daemon or roverlog.Driver")

    def consume(self, stream, thread=False):
        self.write(None)


class RawChannel(Channel):
    """`raw`: samples back to back."""

    format = "raw"

    def read(self, start=0, samples=-1):
        if self.format != "raw" or self.size == 0:
            return super().read(start, samples)
        # As upstream: one open, seek and read into memory the caller owns (a map per read
        # costs more than the copy for the few samples a `trace[i]` reads).
        start = int(start)
        try:
            with open(self.path, "rb", buffering=0) as f:
                n = os.fstat(f.fileno()).st_size // self.size
                count = n - start if samples == -1 else min(int(samples), n - start)
                if samples != -1 and start > n >= 0 and samples > 0:
                    count = 0  # short of what was asked: see below
                elif start < 0 or start > n or count < 0:
                    raise SampleIndexError(f"{self.path}: samples from {start} out of range (channel holds {n})")
                buf = bytearray(count * self.size)
                f.seek(start * self.size)
                got = f.readinto(buf) if count else 0
        except OSError as e:
            raise from_os_error(e, self.path) from None
        if got != len(buf):
            raise FormatError(f"{self.path}: {got} bytes where {len(buf)} were (the file shrank while read)")
        if samples != -1 and count < samples:
            # Short of what was asked: the native reader says whether the sensor's `ts`
            # counts the missing samples (a file cut by a crash: `DamagedSampleError` naming
            # the file and the first of them) or the read ran past the end (what exists).
            return super().read(start, samples)
        return np.frombuffer(buf, self.type).reshape(count, *self.shape)

    def memmap(self):
        """The whole channel as a read-only `np.memmap`."""
        return np.memmap(self.path, dtype=self.type, mode="r", shape=(self.filesize // self.size, *self.shape))


class LzmaChannel(RawChannel):
    """`lzma`: the channel as one `.xz` stream."""

    format = "lzma"


class LzmaFrameChannel(Channel):
    """`lzmaf`: each sample its own `.xz` frame, offsets in `<path>_i`."""

    format = "lzmaf"


class _Images(Channel):
    """Channels of JPEG frames, optionally resized on reading (OpenCV's `resize`)."""

    def __init__(self, path, dtype, shape, resolution=None, interp="area"):
        super().__init__(path, dtype, shape)
        if interp not in _INTERP:
            raise ValueError(f"{self.path}: interp must be one of {quoted_list(_INTERP)}, not {quoted(interp)}")
        self.resolution = None if resolution is None else tuple(resolution)
        self.interp = interp

    def _args(self):
        return {"resolution": self.resolution, "interp": self.interp}

    def _decode(self, frames):
        if self.resolution is None:
            return frames
        import cv2

        flag = getattr(cv2, "INTER_LANCZOS4" if self.interp == "lanczos" else "INTER_" + self.interp.upper())
        return np.stack([cv2.resize(f, self.resolution, interpolation=flag) for f in frames]) if len(frames) else frames


class VideoChannel(_Images):
    """`mjpg`: an MJPEG AVI; frames decoded to RGB, optionally resized to `resolution`
    (width, height) with OpenCV's `interp` method. `fps` (which roverlog's writers keep in
    the channel's `args` for the AVI header; upstream's VideoChannel takes no such argument)
    is accepted and kept as `self.fps`: `ts` is the truth for time."""

    format = "mjpg"

    def __init__(self, path, dtype, shape, resolution=None, interp="area", fps=None):
        super().__init__(path, dtype, shape, resolution, interp)
        self.fps = fps


class BlobChannel(Channel):
    """A directory of `000000.<ext>`, `000001.<ext>`, ... files."""

    def __init__(self, path, dtype, shape, workers=8, length=None):
        super().__init__(path, dtype, shape)
        self.workers = workers

    @cached_property
    def filesize(self):
        try:
            return sum(os.stat(os.path.join(self.path, p)).st_size for p in os.listdir(self.path))
        except OSError as e:
            raise from_os_error(e, self.path) from None


class NPZBlobChannel(BlobChannel):
    """`npz`: one `.npz` per sample, its array named `data`."""

    format = "npz"

    def __init__(self, path, dtype, shape, workers=8, length=None, compress=False):
        super().__init__(path, dtype, shape, workers, length)
        self.compress = compress

    def _decode(self, frames):
        if isinstance(frames, list):
            if not frames:
                return np.empty((0, *self.shape), self.type)
            raise FormatError(f"{self.path}: the samples have different shapes: {sorted({f.shape for f in frames})}")
        return frames


class JPEGBlobChannel(BlobChannel, _Images):
    """`jpg`: one JPEG per sample, decoded to RGB (`resolution`/`interp` as `VideoChannel`'s,
    which upstream's JPEG channel does not take)."""

    format = "jpg"

    def __init__(self, path, dtype, shape, workers=8, length=None, resolution=None, interp="area"):
        _Images.__init__(self, path, dtype, shape, resolution, interp)
        self.workers = workers


CHANNEL_TYPES = {
    "raw": RawChannel,
    "lzma": LzmaChannel,
    "lzmaf": LzmaFrameChannel,
    "mjpg": VideoChannel,
    "npz": NPZBlobChannel,
    "jpg": JPEGBlobChannel,
}


def from_config(path, format, type, shape, description=None, desc=None, args={}, **_other):
    """The channel at `path` described by its `meta.json` entry (`format`, `type`, `shape`);
    `args` go to the channel's constructor."""
    ctype = CHANNEL_TYPES.get(format)
    if ctype is None:
        raise FormatError(f"{path}: unknown channel format {quoted(format)} (known: {quoted_list(CHANNEL_TYPES)})")
    try:
        dtype = np.dtype("<" + type) if isinstance(type, str) and type[:1] not in "<>|=" else np.dtype(type)
    except TypeError:
        raise FormatError(f"{path}: unknown type code {quoted(type)}") from None
    return ctype(path, dtype, shape, **(args or {}))


def _reopen(cls, path, dtype, shape, args):
    return cls(path, dtype, shape, **args)


class _Prefetch:
    """An iterator read ahead by a daemon thread; its exceptions surface in the reader."""

    _END = object()

    def __init__(self, iterator, size):
        self.queue = queue.Queue(maxsize=size)
        self._iterator = iterator
        threading.Thread(target=self._fill, daemon=True).start()

    def _fill(self):
        try:
            for item in self._iterator:
                self.queue.put(item)
            self.queue.put(self._END)
        except Exception as e:  # handed to the reader
            self.queue.put(_Failed(e))

    def __iter__(self):
        return self

    def __next__(self):
        item = self.queue.get()
        if item is self._END:
            raise StopIteration
        if isinstance(item, _Failed):
            raise item.error
        return item


class _Failed:
    def __init__(self, error):
        self.error = error


__all__ = [
    "Channel", "RawChannel", "LzmaChannel", "LzmaFrameChannel", "VideoChannel", "NPZBlobChannel",
    "JPEGBlobChannel", "CHANNEL_TYPES", "from_config",
]
