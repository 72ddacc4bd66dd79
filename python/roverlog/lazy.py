"""Channels as `dask.array`s: `roverlog.to_dask(channel, chunk=None)` (also
`channel.to_dask(chunk)` on `roverlog.Channel` and the `roverlog.redrover` channels).

`dask.array.from_array(channel)` cannot work on a channel itself: its `shape` is one
sample's, as upstream's, and indexing it gives samples with a leading axis. `to_dask` gives
the array of every sample, `(samples, *shape)` (a `redrover` image channel with a
`resolution`: the resized frames' shape), chunked along the samples, `chunk` samples a
chunk (default: about 64 MiB of decoded samples), and other axes whole. Nothing is read
when it is made: each chunk is one `channel.read(start, count)` when dask computes it (on
dask's threads, or pickled by path to its worker processes), so the result equals
`channel.read()` and a sample the sensor counts but the file lost raises
`roverlog.DamagedSampleError` at compute time. The sample count is the channel's length when
`to_dask` is called. Needs dask (`pip install 'dask[array]'`).
"""
import numpy as np

_DEFAULT_CHUNK_BYTES = 64 << 20


def _sample_shape(channel):
    resolution = getattr(channel, "resolution", None)
    if resolution is not None:
        width, height = resolution
        return (int(height), int(width), 3)
    return tuple(int(d) for d in channel.shape)


def _dtype(channel):
    dtype = getattr(channel, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else np.dtype(channel.type)


class _Samples:
    """What `dask.array.from_array` needs of an array: `shape`, `dtype`, `ndim` and
    `__getitem__` with a tuple of slices, over `channel.read`."""

    def __init__(self, channel):
        self.channel = channel
        self.dtype = _dtype(channel)
        self.shape = (len(channel), *_sample_shape(channel))
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        first = key[0] if key else slice(None)
        if not isinstance(first, slice):
            raise TypeError(f"{self.channel!r}: samples are read by slices, not {first!r}")
        start, stop, step = first.indices(self.shape[0])
        block = self.channel.read(start, max(stop - start, 0)) if stop > start else np.empty((0, *self.shape[1:]), self.dtype)
        return block[(slice(None, None, step), *key[1:])]


def to_dask(channel, chunk=None):
    """The channel's samples as a lazy `dask.array` of `(samples, *shape)`, `chunk` samples
    a chunk (default: about 64 MiB)."""
    import dask.array as da

    samples = _Samples(channel)
    per = max(1, int(np.prod(samples.shape[1:], dtype=np.int64)) * samples.dtype.itemsize)
    if chunk is None:
        chunk = max(1, _DEFAULT_CHUNK_BYTES // per)
    if int(chunk) < 1:
        raise ValueError(f"{channel!r}: chunk must be at least 1 sample, not {chunk}")
    chunks = (min(int(chunk), max(samples.shape[0], 1)), *samples.shape[1:])
    return da.from_array(samples, chunks=chunks, asarray=False, fancy=False,
                         meta=np.empty((0,) * samples.ndim, samples.dtype), name=f"roverlog-{id(samples):x}")
