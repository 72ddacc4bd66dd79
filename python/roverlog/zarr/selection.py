"""How `roverlog.zarr.Array` reads a selection, with zarr-python 2's rules (its
`zarr/indexing.py`): basic (ints, slices with a positive step, `...`), orthogonal (`.oindex`,
`get_orthogonal_selection`: per dimension an int, a slice, an integer or a Boolean array),
coordinate (`.vindex`, `get_coordinate_selection`: one integer array per dimension,
broadcast together) and mask selection (`get_mask_selection`: a Boolean array of the
array's shape) and block selection (`.blocks`, `get_block_selection`: chunk indices), each with field names (`a["x"]`, `a[0:3, "x"]`, `a[:, ["x", "y"]]`), and
`__getitem__` choosing between them as zarr-python does.

Only the rows of the first dimension that a selection touches are read (a contiguous range
in one native read; scattered rows by runs of adjacent chunks, each chunk decoded once); the
other dimensions are then selected with numpy from those rows. Results have zarr-python's
dtype, shape and values: fresh C-contiguous arrays, a numpy scalar where zarr-python returns
one. An index past the end is a `SampleIndexError` naming the array (an `IndexError`, as
zarr-python's `BoundsCheckError` is); any other invalid selection is an `IndexError`.

One deliberate difference: a coordinate selection with a field whose type has its own shape
(`agents.vindex[[1, 5], "centroid"]`) returns the `(2, 2)` array it means, where zarr-python
2.18 fails reshaping its output (`ValueError: cannot reshape`).
"""
import numbers

import numpy as np

from ..errors import SampleIndexError


def _is_int(x):
    return isinstance(x, numbers.Integral)


def _is_int_list(x):
    return isinstance(x, list) and len(x) > 0 and _is_int(x[0])


def _is_int_array(x, ndim=None):
    t = not np.isscalar(x) and hasattr(x, "shape") and hasattr(x, "dtype") and x.dtype.kind in "ui"
    return t and (ndim is None or len(x.shape) == ndim)


def _is_bool_array(x, ndim=None):
    t = hasattr(x, "shape") and hasattr(x, "dtype") and x.dtype == bool
    return t and (ndim is None or len(x.shape) == ndim)


def _tuple(v):
    return v if isinstance(v, tuple) else (v,)


def _lists_to_arrays(selection):
    return tuple(np.asarray(s) if isinstance(s, list) else s for s in selection)


def pop_fields(selection):
    """`(fields, selection)`: the field names (a str, a list, or None) taken out."""
    if isinstance(selection, str):
        return selection, ()
    if not isinstance(selection, tuple):
        return None, selection
    fields = [s for s in selection if isinstance(s, str)]
    rest = tuple(s for s in selection if not isinstance(s, str))
    return (fields[0] if len(fields) == 1 else fields), (rest[0] if len(rest) == 1 else rest)


def _out_dtype(fields, dtype):
    if fields is None:
        return dtype
    if not isinstance(fields, (str, list, tuple)):
        raise IndexError(f"'fields' argument must be a string or list of strings; found {type(fields)!r}")
    if not fields:
        return dtype
    if dtype.names is None:
        raise IndexError("invalid 'fields' argument, array does not have any fields")
    try:
        if isinstance(fields, str):
            return dtype[fields]
        return np.dtype([(f, dtype[f]) for f in fields])
    except KeyError as e:
        raise IndexError(f"invalid 'fields' argument, field not found: {e!r}") from e


def _expand(selection, shape):
    """`selection` with `...` replaced and padded with `:` to one item per dimension."""
    selection = _tuple(selection)
    n_ell = sum(1 for s in selection if s is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ell == 1:
        i = selection.index(Ellipsis)
        n_items = len(selection) - 1
        fill = (slice(None),) * max(0, len(shape) - n_items)
        selection = selection[:i] + fill + selection[i + 1:]
    if len(selection) > len(shape):
        raise IndexError(f"too many indices for array; expected {len(shape)}, got {len(selection)}")
    return selection + (slice(None),) * (len(shape) - len(selection))


class _Dims:
    """Bounds checks that name the array."""

    def __init__(self, arr):
        self.arr = arr

    def int(self, i, dim):
        n = self.arr.shape[dim]
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise SampleIndexError(f"{self.arr._file}: index {int(i)} out of bounds for dimension {dim} with length {n}")
        return j

    def ints(self, a, dim):
        n = self.arr.shape[dim]
        a = np.array(a, dtype=np.int64)  # a copy: the caller's array is left alone
        a[a < 0] += n
        bad = (a < 0) | (a >= n)
        if bad.any():
            raise SampleIndexError(
                f"{self.arr._file}: index {int(a[bad][0])} out of bounds for dimension {dim} with length {n}")
        return a

    def slice(self, s, dim):
        start, stop, step = s.indices(self.arr.shape[dim])
        if step < 1:
            raise IndexError("only slices with step >= 1 are supported")
        return start, stop, step


def _gather(arr, rows):
    """`(block, pos)`: `block` holds the distinct `rows` (in bounds) in increasing order,
    `block[pos]` the rows asked for, in their order. Adjacent chunks are read together."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if rows.size == 0:
        return arr._rows(0, 0), rows
    uniq, pos = np.unique(rows, return_inverse=True)
    lo, hi = int(uniq[0]), int(uniq[-1]) + 1
    if hi - lo == len(uniq):
        return arr._rows(lo, hi), pos.reshape(-1)
    chunk = uniq // arr.chunks[0]
    runs = np.split(uniq, np.nonzero(np.diff(chunk) > 1)[0] + 1)
    # Filled in place: `np.concatenate` would make a big-endian field of a structured dtype
    # native.
    out = np.empty((len(uniq),) + tuple(arr.shape[1:]), arr.dtype)
    k = 0
    for run in runs:
        a, b = int(run[0]), int(run[-1]) + 1
        block = arr._rows(a, b)
        out[k:k + len(run)] = block if b - a == len(run) else block[run - a]
        k += len(run)
    return out, pos.reshape(-1)


def _rows_of_slice(arr, start, stop, step):
    """`(block, index)` for rows `start:stop:step` of dimension 0."""
    if step == 1:
        return arr._rows(start, max(start, stop)), slice(None)
    return _gather(arr, np.arange(start, stop, step))


def _with_fields(result, fields, out_dtype):
    if isinstance(fields, str) and fields:
        return result[fields]
    if fields:
        out = np.empty(np.shape(result), out_dtype)
        for f in fields:
            out[f] = result[f]
        return out
    return result


def _finish(result, fields, out_dtype):
    """The selected rows' `fields` as zarr-python returns them."""
    result = _with_fields(result, fields, out_dtype)
    if isinstance(result, np.ndarray):
        if result.ndim == 0:
            return result[()]
        if not result.flags.c_contiguous:
            return result.copy()
    return result


def _zero_d(arr, selection, fields, out_dtype):
    if _tuple(selection) not in ((), (Ellipsis,)):
        raise IndexError(f"too many indices for array; expected 0, got {len(_tuple(selection))}")
    return _with_fields(arr._rows(0, 1).reshape(()), fields, out_dtype)[selection]


def basic(arr, selection, fields=None):
    """zarr-python's `get_basic_selection`."""
    out_dtype = _out_dtype(fields, arr.dtype)
    if not arr.shape:
        return _zero_d(arr, selection, fields, out_dtype)
    dims = _Dims(arr)
    local = []
    for d, s in enumerate(_expand(selection, arr.shape)):
        if _is_int(s):
            local.append(dims.int(s, d))
        elif isinstance(s, slice):
            local.append(slice(*dims.slice(s, d)))
        else:
            raise IndexError("unsupported selection item for basic indexing; "
                             f"expected integer or slice, got {type(s)!r}")
    first = local[0]
    if isinstance(first, int):
        block, local[0] = arr._rows(first, first + 1), 0
    else:
        block, local[0] = _rows_of_slice(arr, first.start, first.stop, first.step)
    return _finish(block[tuple(local)], fields, out_dtype)


def orthogonal(arr, selection, fields=None):
    """zarr-python's `get_orthogonal_selection` (and `.oindex[...]`)."""
    out_dtype = _out_dtype(fields, arr.dtype)
    if not arr.shape:
        return _zero_d(arr, selection, fields, out_dtype)
    dims = _Dims(arr)
    index, drop = [], []
    for d, s in enumerate(_lists_to_arrays(_expand(selection, arr.shape))):
        if _is_int(s):
            index.append(np.array([dims.int(s, d)]))
            drop.append(d)
        elif isinstance(s, slice):
            index.append(np.arange(*dims.slice(s, d)))
        elif _is_int_array(s):
            if s.ndim != 1:
                raise IndexError("integer arrays in an orthogonal selection must be 1-dimensional only")
            index.append(dims.ints(s, d))
        elif _is_bool_array(s):
            if s.ndim != 1:
                raise IndexError("Boolean arrays in an orthogonal selection must be 1-dimensional only")
            if s.shape[0] != arr.shape[d]:
                raise IndexError("Boolean array has the wrong length for dimension; "
                                 f"expected {arr.shape[d]}, got {s.shape[0]}")
            index.append(np.nonzero(s)[0])
        else:
            raise IndexError("unsupported selection item for orthogonal indexing; expected integer, slice, "
                             f"integer array or Boolean array, got {type(s)!r}")
    first = index[0]
    if len(first) and np.all(np.diff(first) == 1):
        block, index[0] = arr._rows(int(first[0]), int(first[-1]) + 1), np.arange(len(first))
    else:
        block, index[0] = _gather(arr, first)
    result = block[np.ix_(*index)] if len(index) > 1 else block[index[0]]
    if drop:
        result = result.reshape(tuple(n for d, n in enumerate(result.shape) if d not in drop))
    return _finish(result, fields, out_dtype)


def coordinate(arr, selection, fields=None):
    """zarr-python's `get_coordinate_selection` (and `.vindex[...]` with integer arrays)."""
    out_dtype = _out_dtype(fields, arr.dtype)
    selection = _lists_to_arrays(tuple([s] if _is_int(s) else s for s in _tuple(selection)))
    if len(selection) != len(arr.shape) or not all(_is_int(s) or _is_int_array(s) for s in selection):
        raise IndexError("invalid coordinate selection; expected one integer (coordinate) array per "
                         f"dimension of the target array, got {selection!r}")
    dims = _Dims(arr)
    coords = np.broadcast_arrays(*(dims.ints(s, d) for d, s in enumerate(selection)))
    shape = coords[0].shape or (1,)
    block, pos = _gather(arr, coords[0])
    result = block[(pos,) + tuple(c.reshape(-1) for c in coords[1:])]
    return _finish(result.reshape(shape), fields, out_dtype)


def mask(arr, selection, fields=None):
    """zarr-python's `get_mask_selection` (and `.vindex[...]` with a Boolean array)."""
    selection = _lists_to_arrays(_tuple(selection))
    if not (len(selection) == 1 and _is_bool_array(selection[0]) and selection[0].shape == arr.shape):
        raise IndexError("invalid mask selection; expected one Boolean (mask)array with the same shape "
                         f"as the target array, got {selection!r}")
    return coordinate(arr, np.nonzero(selection[0]), fields)


def block(arr, selection, fields=None):
    """zarr-python's `get_block_selection` (and `.blocks[...]`): per dimension a chunk
    index or a slice of them (step 1), as the rows of those chunks."""
    _out_dtype(fields, arr.dtype)
    rows = []
    for d, s in enumerate(_lists_to_arrays(_expand(selection, arr.shape))):
        n, c = arr.shape[d], arr.chunks[d]
        blocks = -(-n // c)
        if _is_int(s):
            k = int(s) + blocks if s < 0 else int(s)
            start, stop = k * c, k * c + c
        elif isinstance(s, slice):
            if s.step not in (1, None):
                raise IndexError("unsupported selection item for block indexing; "
                                 f"expected integer or slice with step=1, got {type(s)!r}")
            a = 0 if s.start is None else s.start
            b = blocks if s.stop is None else s.stop
            start, stop = (a + blocks if a < 0 else a) * c, (b + blocks if b < 0 else b) * c
        else:
            raise IndexError("unsupported selection item for block indexing; "
                             f"expected integer or slice, got {type(s)!r}")
        if not 0 <= start < n:
            raise SampleIndexError(f"{arr._file}: block {s!r} out of bounds for dimension {d} ({blocks} blocks)")
        rows.append(slice(start, stop))
    return basic(arr, tuple(rows), fields)


def blocks(arr, selection):
    """zarr-python's `.blocks[selection]`."""
    fields, selection = pop_fields(selection)
    return block(arr, _lists_to_arrays(_tuple(selection)), fields)


def vindex(arr, selection):
    """zarr-python's `.vindex[selection]`."""
    fields, selection = pop_fields(selection)
    selection = _lists_to_arrays(_tuple(selection))
    if len(selection) == len(arr.shape) and all(_is_int(s) or _is_int_array(s) for s in selection):
        return coordinate(arr, selection, fields)
    if len(selection) == 1 and _is_bool_array(selection[0]) and selection[0].shape == arr.shape:
        return mask(arr, selection, fields)
    raise IndexError("unsupported selection type for vectorized indexing; only coordinate selection "
                     "(tuple of integer arrays) and mask selection (single Boolean array) are supported; "
                     f"got {selection!r}")


def oindex(arr, selection):
    """zarr-python's `.oindex[selection]`."""
    fields, selection = pop_fields(selection)
    return orthogonal(arr, _lists_to_arrays(_tuple(selection)), fields)


def _pure_fancy(selection, ndim):
    if ndim == 1 and (_is_int_list(selection) or _is_int_array(selection)):
        return True
    return (
        isinstance(selection, tuple)
        and len(selection) == ndim
        and not any(isinstance(s, slice) or s is Ellipsis for s in selection)
        and all(_is_int(s) or _is_int_list(s) or _is_int_array(s) for s in selection)
        and any(_is_int_list(s) or _is_int_array(s) for s in selection)
    )


def _pure_orthogonal(selection, ndim):
    if not ndim:
        return False
    if _is_int_list(selection) or _is_int_array(selection, ndim=1):
        return True
    return (
        isinstance(selection, tuple)
        and len(selection) == ndim
        and sum(_is_int_list(s) or _is_int_array(s) for s in selection) <= 1
        and all(_is_int_list(s) or _is_int_array(s) or isinstance(s, (int, slice)) for s in selection)
    )


def getitem(arr, selection):
    """zarr-python's `Array.__getitem__`: coordinate selection for integer arrays only,
    orthogonal for one integer array among ints and slices, basic otherwise."""
    fields, pure = pop_fields(selection)
    if _pure_fancy(pure, len(arr.shape)):
        return vindex(arr, selection)
    if _pure_orthogonal(pure, len(arr.shape)):
        return orthogonal(arr, pure, fields)
    return basic(arr, pure, fields)
