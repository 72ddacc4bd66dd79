"""A drop-in for zarr-python 2's reading of Zarr v2 groups and arrays, over the roverlog
library's reader (Blosc, zstd, zlib, gzip, lz4 and what else it decodes; structured dtypes):

    import roverlog.zarr as zarr                 # reading code keeps working
    root = zarr.open("scene.zarr")               # a Group (or an Array)
    agents = root["agents"]
    agents.shape, agents.dtype, agents.chunks
    rows = agents[1000:2000]                     # the numpy array zarr-python returns
    print(agents.info, root.tree())              # zarr-python's reports

`zarr.open`, `open_group` and `open_array` (mode "r"). Arrays and groups have zarr-python 2's
read-only attributes and reading methods (`Array` and `Group` list them): `path`/`name`/
`basename` as zarr-python sets them (`root["agents"].path == "agents"`, `.name == "/agents"`),
`store` (a read-only `DirectoryStore`), `attrs` (read-only `Attributes`), `compressor` and
`filters` (numcodecs' codecs; without numcodecs, `Codec`s with numcodecs' `repr` and
`get_config()`), `fill_value` decoded as zarr-python does, `nbytes_stored`,
`nchunks_initialized`, `info`/`info_items()`, `digest()`, `tree()`, `visit...`. Where ours says
something else: `info`'s `Type` and `Store type` name roverlog's classes
(`roverlog.zarr.Array`, `roverlog.zarr.DirectoryStore`), and the `repr`s name the directory.

Selections are zarr-python 2's (`roverlog.zarr.selection`): basic (`a[5]`, `a[10:20, 2]`,
`a[::3]`), field names (`a["track_id"]`, `a[0:3, "ego_translation"]`), integer arrays
(`a[[1, 5, 9]]`), `a.oindex[...]`/`get_orthogonal_selection` (integer or Boolean arrays per
dimension), `a.vindex[...]`/`get_coordinate_selection`/`get_mask_selection`, `a.blocks[...]`, with
zarr-python's dtypes, shapes and values; `np.asarray(a)` is one bulk read. Only the rows a
selection touches are read; reads decode chunks on several threads with the GIL released.
Arrays are read-only (writing to `attrs` or `store` is a `ReadOnlyError`, a `PermissionError` as
zarr-python's). Objects pickle by path. Errors about the files are `roverlog.Error`s
naming the file (`roverlog.errors`): invalid metadata is a `FormatError` (a `ValueError`), a
missing path a `FileError` (a `FileNotFoundError`), a missing member of a group a
`MissingKeyError` (a `KeyError`, as in zarr-python), an index past the end a
`SampleIndexError` (an `IndexError`, as zarr-python's `BoundsCheckError`).
"""
import builtins
import hashlib
import itertools
import json
import os
import re

import numpy as np

from .. import _roverlog
from . import meta as _meta
from . import selection as _selection
from .meta import Attributes, Codec, DirectoryStore, InfoReporter, ReadOnlyError
from .url import local_path
from ..errors import FileError, FormatError, MissingKeyError, from_os_error, quoted, quoted_list

# zarr-python's `info` names the classes by module: these are roverlog.zarr's.
for _cls in (Attributes, Codec, DirectoryStore, InfoReporter, ReadOnlyError):
    _cls.__module__ = __name__


def _descr(d):
    """A `.zarray` dtype (a string, or a list of [name, type(, shape)]) as numpy takes it."""
    if isinstance(d, str):
        return d
    out = []
    for f in d:
        name, typ = f[0], _descr(f[1])
        out.append((name, typ, tuple(f[2])) if len(f) > 2 else (name, typ))
    return out


class Array:
    """A Zarr v2 array (a directory holding `.zarray`). Decoded chunks that a read uses only
    partly are kept in an LRU of `cache_bytes` (the library's default when `None`; 0: off),
    so neighbouring slices do not decode the same chunk again.

    zarr-python 2's read-only attributes: `store` (a read-only `DirectoryStore`), `path` (the
    array's key in it: `"agents"` when opened from its group, `""` when opened by its own
    directory), `name`, `basename`, `read_only`, `chunk_store`, `shape`, `chunks`, `dtype`,
    `compressor`, `filters`, `fill_value` (decoded as zarr-python decodes it), `order`,
    `attrs`, `ndim`, `size`, `itemsize`, `nbytes`, `nbytes_stored`, `cdata_shape`, `nchunks`,
    `nchunks_initialized` (`initialized`), `is_view`, `write_empty_chunks`, `synchronizer`,
    `meta_array`, `info` and `info_items()`, `digest()` and `hexdigest()`."""

    def __init__(self, path, cache_bytes=None, *, _store=None, _key=""):
        # `path` is the array's directory; a group opens its members with its store and
        # their key in it.
        self._file = os.fspath(path)
        self.store = _store if _store is not None else DirectoryStore(self._file)
        self.path = _key
        self.cache_bytes = cache_bytes
        # The library reads `.zarray` (within its limits), checks it, and says what is wrong
        # with it and where; its values are taken from there (`src/zarr.rs`).
        native = self._native = _roverlog.ZarrArr(self._file)
        if cache_bytes is not None:
            native.set_cache_bytes(int(cache_bytes))
        self._meta = json.loads(native.meta_json())
        self.shape = tuple(native.shape)
        self.chunks = tuple(native.chunks)
        try:
            self.dtype = np.dtype(_descr(self._meta["dtype"]))
        except (TypeError, ValueError) as e:
            zarray = os.path.join(self._file, ".zarray")
            raise FormatError(f"{zarray}: {e!r} (not Zarr v2 array metadata numpy can read)") from None
        self.order = native.order
        self.fill_value = _meta.fill_value(native.fill_value, self.dtype)
        self._separator = native.dimension_separator
        self.attrs = _meta.Attributes(self.store, _join(self.path, ".zattrs"))
        self._le = self.dtype.newbyteorder("<") if self.dtype.fields is None else _little(self.dtype)

    def __reduce__(self):
        return (_reopen_array, (self._file, self.cache_bytes, self.store.path, self.path))

    def __repr__(self):
        return f"<roverlog.zarr.Array {self._file!r} {self.shape} {self.dtype}>"

    def __eq__(self, other):
        return isinstance(other, Array) and self.store == other.store and self.path == other.path

    def __hash__(self):
        return hash((self.store.path, self.path))

    @property
    def name(self):
        """The array's path with a leading `/`, or `None` for an array opened by its own
        directory (zarr-python's)."""
        return "/" + self.path.lstrip("/") if self.path else None

    @property
    def basename(self):
        return self.name.split("/")[-1] if self.name is not None else None

    @property
    def chunk_store(self):
        return self.store

    @property
    def compressor(self):
        """numcodecs' codec of the `.zarray` compressor (`Blosc(cname='lz4', clevel=5,
        shuffle=SHUFFLE, blocksize=0)`), a `roverlog.zarr.Codec` equal to it in `repr` and
        `get_config()` where numcodecs is not installed, or `None`."""
        return _meta.codec(self._meta.get("compressor"))

    @property
    def filters(self):
        """The `.zarray` filters as codecs (as `compressor`), or `None`."""
        filters = self._meta.get("filters")
        return [_meta.codec(f) for f in filters] if filters else None

    @property
    def nbytes_stored(self):
        """The bytes of the files directly in the array's directory, metadata included
        (zarr-python's count for a directory store)."""
        return self.store.getsize(self.path)

    @property
    def nchunks_initialized(self):
        """How many chunks are stored (zarr-python's count: the names in the array's directory
        that start with a digit)."""
        pattern = re.compile(r"\d+" if self.ndim else "")
        return sum(1 for k in self.store.listdir(self.path) if pattern.match(k))

    initialized = nchunks_initialized

    @property
    def is_view(self):
        return False

    @property
    def write_empty_chunks(self):
        return True

    @property
    def synchronizer(self):
        return None

    @property
    def meta_array(self):
        return np.empty(())

    @property
    def info(self):
        """zarr-python's report (`print(a.info)`): the `info_items()`, one per line."""
        return _meta.InfoReporter(self)

    def info_items(self):
        """zarr-python 2's `(name, value)` pairs; `Type` and `Store type` name roverlog's
        classes (`roverlog.zarr.Array`, `roverlog.zarr.DirectoryStore`)."""
        items = [("Name", self.name)] if self.name is not None else []
        items += [
            ("Type", _meta.typestr(self)),
            ("Data type", str(self.dtype)),
            ("Shape", str(self.shape)),
            ("Chunk shape", str(self.chunks)),
            ("Order", self.order),
            ("Read-only", str(self.read_only)),
        ]
        items += [(f"Filter [{i}]", repr(f)) for i, f in enumerate(self.filters or [])]
        items += [("Compressor", repr(self.compressor)), ("Store type", _meta.typestr(self.store))]
        nbytes, stored = self.nbytes, self.nbytes_stored
        items += [("No. bytes", _meta.human_size(nbytes))]
        if stored > 0:
            items += [("No. bytes stored", _meta.human_size(stored)), ("Storage ratio", f"{nbytes / stored:.1f}")]
        items += [("Chunks initialized", f"{self.nchunks_initialized}/{self.nchunks}")]
        return items

    def digest(self, hashname="sha1"):
        """zarr-python's checksum: every chunk's stored bytes (empty for a missing one) in
        chunk order, then `.zarray` and `.zattrs`."""
        h = hashlib.new(hashname)
        for coords in itertools.product(*[range(n) for n in self.cdata_shape]):
            h.update(self.store.get(_join(self.path, self._separator.join(map(str, coords))), b""))
        h.update(self.store.get(_join(self.path, ".zarray"), b""))
        h.update(self.store.get(_join(self.path, ".zattrs"), b""))
        return h.digest()

    def hexdigest(self, hashname="sha1"):
        return self.digest(hashname).hex()

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
        if not self.shape:
            return (1,)  # a 0-d array is one chunk (zarr-python's)
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
    """A Zarr v2 group (a directory holding `.zgroup`), read-only, with zarr-python 2's
    reading API: `g["agents"]`, `g.agents`, `"agents" in g`, `len(g)`, iteration over the
    member names, `keys`/`values`/`items`/`get`, `array_keys`/`arrays`/`group_keys`/`groups`,
    `visit`/`visitkeys`/`visitvalues`/`visititems`, and the attributes `store`, `path`, `name`,
    `basename`, `read_only`, `chunk_store`, `attrs`, `synchronizer`, `meta_array`, `info` and
    `info_items()`."""

    def __init__(self, path, *, _store=None, _key=""):
        self._file = os.fspath(path)
        self.store = _store if _store is not None else DirectoryStore(self._file)
        self.path = _key
        self.attrs = _meta.Attributes(self.store, _join(self.path, ".zattrs"))

    def __reduce__(self):
        return (_reopen_group, (self._file, self.store.path, self.path))

    def __repr__(self):
        return f"<roverlog.zarr.Group {self._file!r}>"

    def __eq__(self, other):
        return isinstance(other, Group) and self.store == other.store and self.path == other.path

    def __hash__(self):
        return hash((self.store.path, self.path))

    def _member(self, name):
        return os.path.join(self._file, *str(name).strip("/").split("/"))

    def __getitem__(self, name):
        # A missing member is a KeyError, as in zarr-python.
        if name not in self:
            raise MissingKeyError(f"{self._file}: no array or group {quoted(name)} (members: {quoted_list(self.keys())})")
        return _open_at(self._member(name), self.store, _join(self.path, str(name).strip("/")))

    def __getattr__(self, name):
        # Members by attribute (`g.agents`), as zarr-python allows.
        if not name.startswith("_") and name in self:
            return self[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __contains__(self, name):
        p = self._member(name)
        return os.path.exists(os.path.join(p, ".zarray")) or os.path.exists(os.path.join(p, ".zgroup"))

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def _ipython_key_completions_(self):
        return self.keys()

    def keys(self):
        try:
            names = os.listdir(self._file)
        except OSError as e:
            raise from_os_error(e, self._file) from None
        return sorted(n for n in names if n in self)

    def values(self):
        return [self[n] for n in self.keys()]

    def items(self):
        return [(n, self[n]) for n in self.keys()]

    def get(self, name, default=None):
        return self[name] if name in self else default

    def array_keys(self):
        return [n for n in self.keys() if os.path.exists(os.path.join(self._file, n, ".zarray"))]

    def group_keys(self):
        return [n for n in self.keys() if os.path.exists(os.path.join(self._file, n, ".zgroup"))]

    def arrays(self):
        return [(n, self[n]) for n in self.array_keys()]

    def groups(self):
        return [(n, self[n]) for n in self.group_keys()]

    def visitvalues(self, func):
        """`func(member)` for every member below the group, depth first in name order; stops
        at (and returns) the first value other than `None`."""
        def walk(obj):
            for name in (obj.keys() if isinstance(obj, Group) else []):
                child = obj[name]
                yield child
                yield from walk(child)

        for obj in walk(self):
            out = func(obj)
            if out is not None:
                return out
        return None

    def visit(self, func):
        """`func(path)` with every member's path relative to the group (as `visitvalues`)."""
        base = len(self.name)
        return self.visitvalues(lambda o: func(o.name[base:].lstrip("/")))

    visitkeys = visit

    def visititems(self, func):
        """`func(path, member)` for every member (as `visit`)."""
        base = len(self.name)
        return self.visitvalues(lambda o: func(o.name[base:].lstrip("/"), o))

    def tree(self, expand=False, level=None):
        """zarr-python's text tree of the members (`print(g.tree())`), `level` deep at most
        (`expand` only matters to zarr-python's notebook widget)."""
        return _Tree(self, level)

    @property
    def name(self):
        return "/" + self.path.lstrip("/") if self.path else "/"

    @property
    def basename(self):
        return self.name.split("/")[-1]

    @property
    def read_only(self):
        return True

    @property
    def chunk_store(self):
        return self.store

    @property
    def synchronizer(self):
        return None

    @property
    def meta_array(self):
        return np.empty(())

    @property
    def info(self):
        return _meta.InfoReporter(self)

    def info_items(self):
        """zarr-python 2's `(name, value)` pairs (`Type` and `Store type` name roverlog's
        classes)."""
        arrays, groups = sorted(self.array_keys()), sorted(self.group_keys())
        items = [("Name", self.name), ("Type", _meta.typestr(self)), ("Read-only", str(self.read_only)),
                 ("Store type", _meta.typestr(self.store)), ("No. members", len(self)),
                 ("No. arrays", len(arrays)), ("No. groups", len(groups))]
        if arrays:
            items += [("Arrays", ", ".join(arrays))]
        if groups:
            items += [("Groups", ", ".join(groups))]
        return items


class _Tree:
    """`Group.tree()`: prints as zarr-python's tree (box-drawing characters; `bytes()` gives
    the ASCII one)."""

    def __init__(self, group, level):
        self.group, self.level = group, level

    def _lines(self, gfx):
        up_right, horizontal, vertical, vertical_right = gfx

        def label(obj):
            text = obj.name.split("/")[-1] or "/"
            return f"{text} {obj.shape} {obj.dtype}" if isinstance(obj, Array) else text

        def draw(obj, depth):
            lines = [label(obj)]
            kids = obj.values() if isinstance(obj, Group) and (self.level is None or depth < self.level) else []
            for k, kid in enumerate(kids):
                last = k == len(kids) - 1
                sub = draw(kid, depth + 1)
                lines.append(" " + (up_right if last else vertical_right) + horizontal * 2 + " " + sub[0])
                lines += [" " + (" " if last else vertical) + "  " + line for line in sub[1:]]
            return lines

        return "\n".join(draw(self.group, 0))

    def __repr__(self):
        return self._lines(("\u2514", "\u2500", "\u2502", "\u251c"))

    def __bytes__(self):
        return self._lines(("+", "-", "|", "+")).encode()


def _join(*parts):
    """Store keys joined with `/` (empty parts dropped)."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def _open_at(path, store, key):
    if os.path.exists(os.path.join(path, ".zarray")):
        return Array(path, _store=store, _key=key)
    if os.path.exists(os.path.join(path, ".zgroup")):
        return Group(path, _store=store, _key=key)
    raise FileError(f"{path}: no .zarray or .zgroup (not a Zarr v2 array or group)")


def _reopen_array(path, cache_bytes, store, key):
    return Array(path, cache_bytes, _store=DirectoryStore(store), _key=key)


def _reopen_group(path, store, key):
    return Group(path, _store=DirectoryStore(store), _key=key)


def _read_only(mode):
    if mode != "r":
        raise ValueError(f"roverlog.zarr is read-only (mode {quoted(mode)})")


def open(path, mode="r"):
    """Opens the group or array at `path` (a directory, or a `file://` or `memory://` URL as
    zarr-python 2 opens them: `roverlog/zarr/url.py`; read-only: `mode` must be "r")."""
    _read_only(mode)
    path = local_path(path)
    return _open_at(path, DirectoryStore(path), "")


def open_group(path, mode="r"):
    """Opens the group at `path` (zarr-python's `open_group`, read-only; URLs as `open`)."""
    _read_only(mode)
    path = local_path(path)
    if not os.path.exists(os.path.join(path, ".zgroup")):
        raise FileError(f"{path}: no .zgroup (not a Zarr v2 group)")
    return Group(path)


def open_array(path, mode="r"):
    """Opens the array at `path` (zarr-python's `open_array`, read-only; URLs as `open`)."""
    _read_only(mode)
    path = local_path(path)
    if not os.path.exists(os.path.join(path, ".zarray")):
        raise FileError(f"{path}: no .zarray (not a Zarr v2 array)")
    return Array(path)
