"""A drop-in for zarr-python 2's reading of Zarr v2 groups and arrays, over the roverlog
library's reader (Blosc, zstd, zlib, gzip, lz4 and what else it decodes; structured dtypes):

    import roverlog.zarr as zarr                 # reading code keeps working
    root = zarr.open("scene.zarr")               # a Group (or an Array)
    agents = root["agents"]
    agents.shape, agents.dtype, agents.chunks
    rows = agents[1000:2000]                     # the numpy array zarr-python returns

Reads decode chunks on several threads with the GIL released. Indexing selects along the
first dimension (an int, a slice with a positive step, `...`/`:`); arrays are read-only.
Objects pickle by path. Errors about the files are `roverlog.Error`s naming the file
(`roverlog.errors`): invalid metadata is a `FormatError` (a `ValueError`), a missing array a
`FileError` (a `FileNotFoundError`), a row past the end a `SampleIndexError`.
"""
import builtins
import json
import os

import numpy as np

from . import _roverlog
from .errors import FileError, FormatError, SampleIndexError, from_os_error


def _descr(d):
    """A `.zarray` dtype (a string, or a list of [name, type(, shape)]) as numpy takes it."""
    if isinstance(d, str):
        return d
    out = []
    for f in d:
        name, typ = f[0], _descr(f[1])
        out.append((name, typ, tuple(f[2])) if len(f) > 2 else (name, typ))
    return out


def _json(path):
    """The JSON document in `path`; errors name the file."""
    try:
        with builtins.open(path, "rb") as f:
            return json.load(f)
    except OSError as e:
        raise from_os_error(e, path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: invalid JSON: {e}") from None


def _attrs(path):
    p = os.path.join(path, ".zattrs")
    if not os.path.exists(p):
        return {}
    return _json(p)


class Array:
    """A Zarr v2 array (a directory holding `.zarray`). Decoded chunks that a read uses only
    partly are kept in an LRU of `cache_bytes` (the library's default when `None`; 0: off),
    so neighbouring slices do not decode the same chunk again."""

    def __init__(self, path, cache_bytes=None):
        self.path = os.fspath(path)
        self.cache_bytes = cache_bytes
        # The library checks `.zarray` first, and says what is wrong with it and where.
        self._native = _roverlog.ZarrArr(self.path)
        if cache_bytes is not None:
            self._native.set_cache_bytes(int(cache_bytes))
        zarray = os.path.join(self.path, ".zarray")
        meta = _json(zarray)
        try:
            self.shape = tuple(meta["shape"])
            self.chunks = tuple(meta["chunks"])
            self.dtype = np.dtype(_descr(meta["dtype"]))
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError(f"{zarray}: {e!r} (not Zarr v2 array metadata numpy can read)") from None
        self.order = meta.get("order", "C")
        self.fill_value = meta.get("fill_value")
        self.attrs = _attrs(self.path)
        self._le = self.dtype.newbyteorder("<") if self.dtype.fields is None else _little(self.dtype)

    def __reduce__(self):
        return (Array, (self.path, self.cache_bytes))

    def __repr__(self):
        return f"<roverlog.zarr.Array {self.path!r} {self.shape} {self.dtype}>"

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def _rows(self, a, b):
        flat = self._native.read_rows(a, b)
        out = flat.view(self._le).reshape((b - a,) + self.shape[1:])
        return out if self._le == self.dtype else out.astype(self.dtype)

    def __getitem__(self, key):
        if not self.shape:
            if key in ((), Ellipsis, slice(None)):
                return self._rows(0, 1).reshape(())
            raise SampleIndexError(f"{self.path}: a 0-d array takes () or ..., not {key!r}")
        if key is Ellipsis or key == ():
            key = slice(None)
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        n = self.shape[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise SampleIndexError(f"{self.path}: index {key} out of bounds for axis 0 with size {n}")
            return self._rows(i, i + 1)[0]
        if isinstance(key, slice):
            a, b, step = key.indices(n)
            if step < 1:
                raise IndexError(f"{self.path}: only positive slice steps are supported, not {step}")
            b = max(a, b)
            rows = self._rows(a, b)
            return rows[::step] if step != 1 else rows
        raise IndexError(f"{self.path}: rows are selected by an int or a slice, not {key!r}")


def _little(dt):
    """`dt` with every field's byte order little-endian (the reader's output)."""
    fields = []
    for name in dt.names:
        sub, offset = dt.fields[name][:2]
        base, shape = sub.subdtype if sub.subdtype else (sub, ())
        base = _little(base) if base.fields else base.newbyteorder("<")
        fields.append((name, base, shape) if shape else (name, base))
    return np.dtype(fields)


class Group:
    """A Zarr v2 group (a directory holding `.zgroup`)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.attrs = _attrs(self.path)

    def __reduce__(self):
        return (Group, (self.path,))

    def __repr__(self):
        return f"<roverlog.zarr.Group {self.path!r}>"

    def __getitem__(self, name):
        return open(os.path.join(self.path, *str(name).strip("/").split("/")))

    def __contains__(self, name):
        p = os.path.join(self.path, *str(name).strip("/").split("/"))
        return os.path.exists(os.path.join(p, ".zarray")) or os.path.exists(os.path.join(p, ".zgroup"))

    def keys(self):
        return sorted(n for n in os.listdir(self.path) if n in self)

    def array_keys(self):
        return [n for n in self.keys() if os.path.exists(os.path.join(self.path, n, ".zarray"))]

    def group_keys(self):
        return [n for n in self.keys() if os.path.exists(os.path.join(self.path, n, ".zgroup"))]

    def arrays(self):
        return [(n, self[n]) for n in self.array_keys()]

    def groups(self):
        return [(n, self[n]) for n in self.group_keys()]


def open(path, mode="r"):
    """Opens the group or array at `path` (read-only: `mode` must be "r")."""
    if mode != "r":
        raise ValueError(f"roverlog.zarr is read-only (mode {mode!r})")
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, ".zarray")):
        return Array(path)
    if os.path.exists(os.path.join(path, ".zgroup")):
        return Group(path)
    raise FileError(f"{path}: no .zarray or .zgroup (not a Zarr v2 array or group)")
