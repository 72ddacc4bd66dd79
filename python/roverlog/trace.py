"""roverd traces, with the names upstream `roverd` uses.

    trace = roverlog.Trace("data/2026.11.22-08.00.00")
    imu = trace["imu"]                       # or trace.sensors["imu"]
    imu.timestamps                           # float64 epoch seconds, zero-copy
    acc = imu.channels["acc"].read()         # (n, *shape) array of the declared dtype
    frames = trace["camera"].channels["video.avi"][10:20]   # decoded RGB, (10, H, W, 3)

`raw` channels are zero-copy, read-only views of the mapped file (the array keeps the map
alive); pass `writable=True` for copies (e.g. for `torch.from_numpy`). `lzma`/`lzmaf` frames
and JPEG frames (`jpg`, `mjpg`) are decoded by the native library on every core with the GIL
released. Every object pickles by path and re-opens in the receiving process.

`meta.json` is read, and samples counted, by the native library's rules (core's
`format::meta` and `format::bounds`, `src/meta.rs`): a sensor whose `meta.json` core refuses
does not open here either. Errors about the files are `roverlog.Error`s naming the file,
channel and sample (`roverlog.errors`); `sensor.channels` and `trace.sensors` are dicts whose missing keys raise
`roverlog.MissingKeyError` (a `KeyError`) naming the directory and the names it holds.
"""
import io
import json
import mmap
import os
from collections.abc import Mapping
from functools import cached_property

import numpy as np

from . import _roverlog
from .errors import FileError, FormatError, MissingKeyError, SampleIndexError, from_os_error, quoted, quoted_list

META_FILE = "meta.json"
TS = "ts"


def _dtype(code):
    return np.dtype("<" + code)


class _Names(dict):
    """A dict of a directory's sensors or channels whose missing key says where it looked."""

    def __init__(self, items, where, what):
        super().__init__(items)
        self._where, self._what = where, what

    def __missing__(self, key):
        raise MissingKeyError(f"{self._where}: no {self._what} {quoted(key)} ({self._what}s: {quoted_list(self)})")

    def __reduce__(self):
        return (_Names, (dict(self), self._where, self._what))


class Channel:
    """One channel of a sensor (`raw`, `lzma`, `lzmaf`, `jpg`, `npz`, `mjpg`)."""

    def __init__(self, sensor_dir, name, meta, writable=False):
        self.sensor_dir = os.fspath(sensor_dir)
        self.name = name
        self.meta = dict(meta)
        # Checked by core as a `meta.json` entry; errors name `meta.json` and the channel.
        self.format, code, shape = _roverlog.channel_meta(self.sensor_dir, name, json.dumps(self.meta))
        self.type = self.meta["type"]
        self.shape = tuple(shape)
        self.dtype = _dtype(code)
        self.writable = writable
        self.path = os.path.join(self.sensor_dir, name)

    def __reduce__(self):
        return (Channel, (self.sensor_dir, self.name, self.meta, self.writable))

    def _native(self):
        """The channel opened once by the native library (its listing or index loaded once,
        refreshed when a trace still being recorded grew); opened again in a forked child."""
        pid = os.getpid()
        if self.__dict__.get("_native_pid") != pid:
            # Opened by its description (the sensor's `meta.json` entry, or what upstream's
            # channel classes were given: they open files without a `meta.json` beside them).
            self._native_handle = _roverlog.NativeChannel(self.sensor_dir, self.name, json.dumps(self.meta))
            self._native_pid = pid
        return self._native_handle

    def __repr__(self):
        return f"Channel({self.path!r}, format={self.format!r}, type={self.type!r}, shape={list(self.shape)})"

    @property
    def sample_bytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def _raw(self):
        """The `raw` channel's samples as a read-only array over the mapped file."""
        n = len(self)
        if n == 0:
            return np.empty((0, *self.shape), self.dtype)
        try:
            with open(self.path, "rb") as f:
                m = mmap.mmap(f.fileno(), n * self.sample_bytes, access=mmap.ACCESS_READ)
        except OSError as e:
            raise from_os_error(e, self.path) from None
        return np.frombuffer(m, dtype=self.dtype, count=n * (self.sample_bytes // self.dtype.itemsize)).reshape(
            n, *self.shape
        )

    def __len__(self):
        """Samples the channel holds: what the sensor's `ts` and the channel's intact data
        agree on (docs/format.md "Damaged channels"). A sample `ts` counts past it, or a hole
        before it in a `jpg`/`npz` channel, raises `DamagedSampleError`. Counted by the
        native reader (core's `format::bounds`), for every format."""
        return self._native().len()

    def _past_end(self, first, n):
        """Raises `DamagedSampleError` when the sensor counts sample `first`, at or past the
        channel's `n` samples (the native reader finds why); `SampleIndexError` otherwise."""
        self._native().read(first, 1, False)
        raise SampleIndexError(f"{self.path}: sample {first} out of range (channel holds {n})")

    def _bounds(self, start, samples):
        n = len(self)
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
            raise TypeError(f"start must be an int, not {type(start).__name__}")
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)):
            raise TypeError(f"samples must be an int, not {type(samples).__name__}")
        if samples == -1:
            samples = n - start
        if start >= 0 and samples > 0 and start + samples > n:
            try:
                self._past_end(max(start, n), n)
            except SampleIndexError:
                pass
        if start < 0 or samples < 0 or start + samples > n:
            raise SampleIndexError(f"{self.path}: samples {start}..{start + samples} out of range (channel holds {n})")
        return int(start), int(samples)

    def read(self, start=0, samples=-1, decode=True):
        """Samples `start .. start + samples` (-1: to the end) as one array of shape
        `(samples, *shape)`; JPEG channels decode to `(samples, H, W, 3)` RGB, or give a list
        of the JPEG bytes with `decode=False`; `npz` channels give the arrays stacked (a list
        when their shapes differ, or the files' bytes with `decode=False`)."""
        start, samples = self._bounds(start, samples)
        if self.format == "raw":
            a = self._raw()[start:start + samples]
            return a.copy() if self.writable else a
        data, shape = self._native().read(start, samples, decode)
        return self._from_native(data, shape, samples, decode)

    def _from_native(self, data, shape, samples, decode=True):
        """What the native reader gave as the samples' array (or list, for blobs)."""
        if isinstance(data, list):
            if self.format == "npz" and decode:
                arrays = [np.load(io.BytesIO(b))["data"] for b in data]
                shapes = {a.shape for a in arrays}
                return np.stack(arrays) if len(shapes) == 1 and arrays else arrays
            return data
        if shape is not None:
            if samples == 0:
                # No frame to take the size from: the declared one (upstream's `[H, W, 3]`).
                return np.empty((0, *self.shape), np.uint8)
            return data.reshape(samples, *shape)
        return data.view(self.dtype).reshape(samples, *self.shape)

    def __getitem__(self, index):
        if isinstance(index, slice):
            a, b, step = index.indices(len(self))
            if step < 0:
                raise ValueError("negative slice steps are not supported")
            out = self.read(a, max(b - a, 0))
            return out[::step] if step != 1 else out
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            if index >= 0 and self.format != "raw":
                # One native call: it checks the index against the length (and names a
                # damaged sample) itself, where len() + read() took three, each with its
                # stats of the channel's files (single reads cost ~2x upstream's before).
                data, shape = self._native().read(int(index), 1, True)
                if shape is not None:  # decoded JPEG pixels
                    return data.reshape(shape)
                if not isinstance(data, list):  # fixed-size samples
                    return data.view(self.dtype).reshape(self.shape)
                return self._from_native(data, shape, 1)[0]
            n = len(self)
            i = index + n if index < 0 else index
            if i >= n:
                try:
                    self._past_end(i, n)
                except SampleIndexError:
                    pass
            if not 0 <= i < n:
                raise SampleIndexError(f"{self.path}: sample {index} out of range (channel holds {n})")
            return self.read(int(i), 1)[0]
        raise TypeError(f"channel indices are ints or slices, not {type(index).__name__}")

    def to_dask(self, chunk=None):
        """The samples as a lazy `dask.array` chunked by samples (`roverlog.to_dask`)."""
        from .lazy import to_dask

        return to_dask(self, chunk)

    def stream(self, batch=None):
        """Samples in order: one at a time, or arrays of `batch` samples (the last shorter)."""
        n = len(self)
        step = 1 if batch is None else int(batch)
        if step < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        for i in range(0, n, step):
            block = self.read(i, min(step, n - i))
            if batch is None:
                yield block[0]
            else:
                yield block


class Metadata:
    """A sensor's metadata in abstract-dataloader's terms: its timestamps."""

    def __init__(self, timestamps):
        self.timestamps = timestamps


class Sensor:
    """A sensor directory: `meta.json`, `ts`, one file or directory per channel."""

    def __init__(self, path, writable=False):
        self.path = os.fspath(path)
        self.name = os.path.basename(os.path.normpath(self.path))
        self.writable = writable
        # Read and checked whole by core (size limit, every description, `ts`); what comes
        # back is the file's object as written.
        self.meta = json.loads(_roverlog.sensor_meta(self.path))
        self.channels = _Names(
            {n: Channel(self.path, n, m, writable) for n, m in self.meta.items()}, self.path, "channel"
        )

    def __reduce__(self):
        return (Sensor, (self.path, self.writable))

    def __repr__(self):
        return f"Sensor({self.path!r}, {len(self)} samples, channels={list(self.channels)})"

    @property
    def timestamps(self):
        """Epoch seconds, float64, one per sample (upstream counts samples by them)."""
        return self.channels[TS].read()

    @property
    def metadata(self):
        return Metadata(self.timestamps)

    def __len__(self):
        """Samples the sensor's `ts` counts (core's `format::bounds::ts_count`)."""
        n = _roverlog.ts_count(self.path)
        if n is None:
            ts = os.path.join(self.path, TS)
            try:
                os.stat(ts)
            except OSError as e:
                raise from_os_error(e, ts) from None
            raise FileError(f"{ts}: no such file")
        return n

    def __getitem__(self, index):
        """Sample `index` of every channel, as a dict (abstract-dataloader's `Sensor`)."""
        if isinstance(index, str):
            return self.channels[index]
        return {n: c[index] for n, c in self.channels.items() if n != TS}

    def stream(self, batch=None):
        """Samples in order: dicts of every channel, one sample or `batch` samples each, for
        every sample `ts` counts (a damaged one raises `DamagedSampleError`: the stream does
        not end early without a word)."""
        n = len(self)
        step = 1 if batch is None else int(batch)
        if step < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        channels = {name: c for name, c in self.channels.items() if name != TS}
        for i in range(0, n, step):
            block = {name: c.read(i, min(step, n - i)) for name, c in channels.items()}
            yield {name: b[0] for name, b in block.items()} if batch is None else block

    def index_at(self, t):
        """The first sample at or after `t` (epoch seconds; an array gives an array)."""
        return np.searchsorted(self.timestamps, t, side="left")

    def check(self):
        """Problems `roverlog validate` finds in this sensor (empty when sound)."""
        return _roverlog.check_sensor(self.path)


class Nearest:
    """Nearest-neighbour synchronisation, the same indices as abstract-dataloader's
    `generic.Nearest(reference, margin, tol)` (which upstream roverd users use), without
    depending on it.

    The reference sensor's timestamps are first cut to the span that every sensor covers:
    from the latest first timestamp to the earliest last one, after dropping each sensor's
    `margin`. A margin is `(start, end)` for every sensor, or `{sensor: (start, end)}` (a
    sensor not named has none); each side is a number of samples (an `int`) or seconds (a
    `float`). For each reference timestamp left, the index of the nearest sample of every
    sensor (ties go to the earlier one); reference samples for which some sensor has none
    closer than `tol` seconds are left out. Indices are `uint32`."""

    def __init__(self, reference, margin={}, tol=0.1):
        if isinstance(margin, (int, float)) and not isinstance(margin, bool):
            raise TypeError(
                f"margin must be (start, end) or {{sensor: (start, end)}}, not {margin!r} "
                "(the tolerance is the third argument: Nearest(reference, tol=...))"
            )
        if tol < 0:
            raise ValueError(f"synchronisation tolerance must not be negative: {tol}")
        if isinstance(margin, Mapping):
            for k, v in margin.items():
                if len(v) != 2:
                    raise TypeError(f"margin for sensor {quoted(k)} must be (start, end), not {v!r}")
            self._default, self._margin = (0, 0), dict(margin)
        else:
            if len(margin) != 2:
                raise TypeError(f"margin must be (start, end), not {margin!r}")
            self._default, self._margin = tuple(margin), {}
        self.reference = reference
        self.tol = tol

    def __reduce__(self):
        margin = self._margin if self._margin else self._default
        return (Nearest, (self.reference, margin, self.tol))

    def _bounds(self, name, ts):
        """First and last index of `ts` left after the margin (abstract-dataloader's rule:
        an `int` side counts samples, anything else seconds)."""
        left, right = self._margin.get(name, self._default)
        start = left if isinstance(left, int) else int(np.searchsorted(ts, ts[0] + left, side="left"))
        end = len(ts) - 1 - right if isinstance(right, int) else int(np.searchsorted(ts, ts[-1] - right, side="right")) - 1
        return start, end

    def reference_timestamps(self, timestamps):
        """The reference sensor's timestamps inside the span every sensor covers."""
        if self.reference not in timestamps:
            raise KeyError(f"no reference sensor {quoted(self.reference)} among {quoted_list(timestamps)}")
        first, last = [], []
        for name, ts in timestamps.items():
            if len(ts) == 0:
                raise ValueError(f"sensor {quoted(name)} has no sample to synchronise to")
            start, end = self._bounds(name, ts)
            first.append(ts[start])
            last.append(ts[end])
        ref = timestamps[self.reference]
        a = np.searchsorted(ref, max(first), side="left")
        b = np.searchsorted(ref, min(last), side="right")
        return ref[a:b]

    def __call__(self, timestamps):
        timestamps = {n: np.asarray(ts, dtype=np.float64) for n, ts in timestamps.items()}
        ref = self.reference_timestamps(timestamps)
        out = {n: np.searchsorted((ts[:-1] + ts[1:]) / 2, ref).astype(np.uint32) for n, ts in timestamps.items()}
        valid = np.all(np.array([np.abs(timestamps[n][i] - ref) < self.tol for n, i in out.items()]), axis=0)
        return {n: i[valid] for n, i in out.items()}


class Trace:
    """A trace directory: `config.yaml` and one directory per sensor (virtual sensors, whose
    names start with `_`, are left out as upstream does).

    With `sync` (e.g. `Nearest("camera", tol=0.05)`), `trace[i]` is the `i`-th synchronised
    sample of every sensor and `len(trace)` their count (abstract-dataloader's `Trace`)."""

    # URL prefix -> the class that reads such traces in place; roverlog/remote.py registers
    # `s3://` (so this module imports nothing that imports it back).
    _in_place = {}

    def __new__(cls, path=None, *args, **kwargs):
        if cls is Trace and isinstance(path, str):
            for prefix, reader in Trace._in_place.items():
                if path.startswith(prefix):
                    return reader(path, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, path, sync=None, writable=False):
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            if os.path.exists(self.path):
                raise FileError(f"{self.path}: a file, not a trace directory")
            raise FileError(f"{self.path}: no such trace directory")
        try:
            listed = os.listdir(self.path)
        except OSError as e:
            raise from_os_error(e, self.path) from None
        names = sorted(
            n for n in listed if not n.startswith("_") and os.path.isfile(os.path.join(self.path, n, META_FILE))
        )
        if not names and not os.path.isfile(os.path.join(self.path, "config.yaml")):
            raise FormatError(f"{self.path}: not a trace (no config.yaml and no sensor with meta.json)")
        self.sync = sync
        self.writable = writable
        self.sensors = _Names({n: Sensor(os.path.join(self.path, n), writable) for n in names}, self.path, "sensor")

    def __reduce__(self):
        return (Trace, (self.path, self.sync, self.writable))

    def __repr__(self):
        return f"Trace({self.path!r}, sensors={list(self.sensors)})"

    @cached_property
    def _indices(self):
        if self.sync is None:
            raise TypeError("trace[int] needs a synchronisation: Trace(path, sync=Nearest(...))")
        return self.sync({n: s.timestamps for n, s in self.sensors.items()})

    def __len__(self):
        return len(next(iter(self._indices.values()), []))

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.sensors[key]
        idx = self._indices
        return {n: self.sensors[n][int(i[key])] for n, i in idx.items()}
