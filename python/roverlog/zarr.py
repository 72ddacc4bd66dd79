"""A drop-in for zarr-python 2's reading of Zarr v2 groups and arrays, over the roverlog
library's reader (Blosc, zstd, zlib, gzip, lz4 and what else it decodes; structured dtypes):

    import roverlog.zarr as zarr                 # reading code keeps working
    root = zarr.open("scene.zarr")               # a Group (or an Array)
    agents = root["agents"]
    agents.shape, agents.dtype, agents.chunks
    rows = agents[1000:2000]                     # the numpy array zarr-python returns

Selections are zarr-python 2's (`roverlog._selection`): basic (`a[5]`, `a[10:20, 2]`,
`a[::3]`), field names (`a["track_id"]`, `a[0:3, "ego_translation"]`), integer arrays
(`a[[1, 5, 9]]`), `a.oindex[...]`/`get_orthogonal_selection` (integer or Boolean arrays per
dimension), `a.vindex[...]`/`get_coordinate_selection`/`get_mask_selection`, `a.blocks[...]`, with
zarr-python's dtypes, shapes and values; `np.asarray(a)` is one bulk read. Only the rows a
selection touches are read; reads decode chunks on several threads with the GIL released.
Arrays are read-only. Objects pickle by path. Errors about the files are `roverlog.Error`s
naming the file (`roverlog.errors`): invalid metadata is a `FormatError` (a `ValueError`), a
missing path a `FileError` (a `FileNotFoundError`), a missing member of a group a
`MissingKeyError` (a `KeyError`, as in zarr-python), an index past the end a
`SampleIndexError` (an `IndexError`, as zarr-python's `BoundsCheckError`).
"""
import builtins
import json
import os

import numpy as np

from . import _roverlog, _selection
from .errors import FileError, FormatError, MissingKeyError, from_os_error, quoted, quoted_list


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

    def __getitem__(self, selection):
        return _selection.getitem(self, selection)

    def __array__(self, dtype=None, copy=None):
        # One bulk read; without this numpy would read the array row by row through
        # `__getitem__`. The read is a fresh array, so nothing needs copying for `copy`.
        return np.asarray(self[...], dtype=dtype)

    def __iter__(self):
        return self.islice()

    def islice(self, start=None, end=None):
        """Rows `start .. end`, one at a time, each chunk read once (zarr-python's `islice`)."""
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        start = 0 if start is None else start
        end = self.shape[0] if end is None or end > self.shape[0] else end
        if not isinstance(start, int) or start < 0:
            raise ValueError("start must be a nonnegative integer")
        if not isinstance(end, int) or end < 0:
            raise ValueError("end must be a nonnegative integer")
        a, step = start, self.chunks[0]
        while a < end:
            # From `start` to the end of its chunk, then chunk by chunk.
            b = min(end, (a // step + 1) * step)
            yield from self[a:b]
            a = b

    def get_basic_selection(self, selection=Ellipsis, out=None, fields=None):
        return _out(_selection.basic(self, selection, fields), out)

    def get_orthogonal_selection(self, selection, out=None, fields=None):
        return _out(_selection.orthogonal(self, selection, fields), out)

    def get_coordinate_selection(self, selection, out=None, fields=None):
        return _out(_selection.coordinate(self, selection, fields), out)

    def get_mask_selection(self, selection, out=None, fields=None):
        return _out(_selection.mask(self, selection, fields), out)

    def get_block_selection(self, selection, out=None, fields=None):
        return _out(_selection.block(self, selection, fields), out)

    @property
    def blocks(self):
        """Block selection: `a.blocks[2]` is the rows of chunk 2, `a.blocks[1:3]` of chunks 1-2."""
        return _Indexer(self, _selection.blocks)

    @property
    def oindex(self):
        """Orthogonal selection: `a.oindex[[1, 5], 0:2]`, Boolean arrays per dimension."""
        return _Indexer(self, _selection.oindex)

    @property
    def vindex(self):
        """Coordinate (`a.vindex[[1, 5], [0, 2]]`) or mask (`a.vindex[bools]`) selection."""
        return _Indexer(self, _selection.vindex)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def cdata_shape(self):
        return tuple(-(-n // c) for n, c in zip(self.shape, self.chunks))

    @property
    def nchunks(self):
        return int(np.prod(self.cdata_shape, dtype=np.int64))

    @property
    def read_only(self):
        return True


class _Indexer:
    """`Array.oindex` / `Array.vindex`: subscripting calls the selection."""

    __slots__ = ("_arr", "_select")

    def __init__(self, arr, select):
        self._arr, self._select = arr, select

    def __getitem__(self, selection):
        return self._select(self._arr, selection)


def _out(result, out):
    """`result`, or copied into the caller's `out` array (zarr-python's `out=`)."""
    if out is None:
        return result
    if np.shape(out) != np.shape(result):
        raise ValueError(f"parameter 'out': expected shape {np.shape(result)}, found {np.shape(out)}")
    out[...] = result
    return out


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
        # A missing member is a KeyError, as in zarr-python.
        if name not in self:
            raise MissingKeyError(f"{self.path}: no array or group {quoted(name)} (members: {quoted_list(self.keys())})")
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
        raise ValueError(f"roverlog.zarr is read-only (mode {quoted(mode)})")
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, ".zarray")):
        return Array(path)
    if os.path.exists(os.path.join(path, ".zgroup")):
        return Group(path)
    raise FileError(f"{path}: no .zarray or .zgroup (not a Zarr v2 array or group)")
