"""roverlog.zarr's selections against zarr-python 2's on the same arrays (issue 27): field
names, integer arrays, Boolean and orthogonal selection, coordinate and mask selection,
`np.asarray`, iteration; each result with zarr-python's type, dtype, shape and values, and
each selection zarr-python refuses refused with the same kind of exception."""
import numcodecs
import numpy as np
import pytest
import zarr as zarr_python

import roverlog
import roverlog.zarr as ours

STRUCT = np.dtype([("id", "<u8"), ("pos", "<f4", (2,)), ("label", "<i2"), ("nested", [("a", "<u1"), ("b", ">i4")])])


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("zsel") / "g.zarr")
    g = zarr_python.open_group(d, mode="w")
    rng = np.random.default_rng(1)
    s = np.zeros(1000, STRUCT)
    s["id"] = np.arange(1000)
    s["pos"] = rng.standard_normal((1000, 2))
    s["label"] = rng.integers(-5, 5, 1000)
    s["nested"]["a"] = np.arange(1000) % 256
    s["nested"]["b"] = -np.arange(1000)
    blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    g.create_dataset("struct", data=s, chunks=(97,), compressor=blosc)
    g.create_dataset("f4_2d", data=rng.standard_normal((513, 7)).astype("<f4"), chunks=(97, 3), compressor=blosc)
    g.create_dataset("be_i8", data=np.arange(777, dtype=">i8") * -3, chunks=(50,), compressor=blosc)
    g.create_dataset("u2_3d", data=rng.integers(0, 60000, (101, 3, 5), dtype=np.uint16), chunks=(10, 3, 2),
                     compressor=numcodecs.Zstd())
    sparse = g.create_dataset("sparse", shape=(300,), chunks=(50,), dtype="<f8", fill_value=-1.5)
    sparse[120:180] = 7.0
    g.create_dataset("zero_d", data=np.array(42, "<i4"), compressor=blosc)
    return d


def _same(mine, theirs, what):
    """Either both raised an exception of the same builtin kind, or both returned the same
    type, dtype, shape and bytes."""
    m_err = t_err = None
    try:
        x = mine()
    except Exception as e:  # noqa: BLE001  (compared below)
        m_err = e
    try:
        y = theirs()
    except Exception as e:  # noqa: BLE001
        t_err = e
    if t_err is not None or m_err is not None:
        assert t_err is not None, f"{what}: zarr-python returns {y!r}, ours raises {m_err!r}"
        assert m_err is not None, f"{what}: zarr-python raises {t_err!r}, ours returns {x!r}"
        for builtin in (IndexError, ValueError, TypeError, KeyError):
            assert isinstance(m_err, builtin) == isinstance(t_err, builtin), (what, m_err, t_err)
        if isinstance(m_err, IndexError) and "out of bounds" in str(t_err):
            assert isinstance(m_err, roverlog.SampleIndexError), (what, m_err)
        return "raised"
    assert type(x) is type(y), (what, type(x), type(y))
    assert x.dtype == y.dtype and np.shape(x) == np.shape(y), (what, x.dtype, y.dtype, np.shape(x), np.shape(y))
    assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), what
    if isinstance(x, np.ndarray):
        assert x.flags.c_contiguous, what
    return "equal"


def _check(a, t, sels, name, skip_vindex=()):
    outcomes = []
    for how in ["getitem", "oindex", "vindex", "blocks"]:
        for sel in sels:
            if how == "vindex" and any(f in skip_vindex for f in (sel if isinstance(sel, tuple) else (sel,)) if isinstance(f, str)):
                continue
            if how == "getitem":
                outcomes.append(_same(lambda: a[sel], lambda: t[sel], (name, how, sel)))
            else:
                outcomes.append(_same(lambda: getattr(a, how)[sel], lambda: getattr(t, how)[sel], (name, how, sel)))
    return outcomes


ONE_D = [
    [1, 5, 9], [9, 1, 5, 5], [-1, 0, -2], np.array([96, 97, 2, 500]), np.array([], dtype=np.int64),
    np.array([3], dtype=np.uint8), 0, -1, 5, 999, 1000, -1001, slice(None), slice(3, 900, 7), slice(96, 98),
    slice(None, None, 200), slice(5, 2), slice(None, None, -1), ..., (), (slice(10, 20),), ([2, 4],),
    [1000], [-1001], 1.5, None, [[1, 2], [3, 4]], np.array([[1, 2], [3, 4]]), [True, False], True,
    np.array(5), np.int64(-3), slice(1, 3), slice(-2, None), slice(0, 4, 2), 20, -20,
]


def test_one_dimensional_selections_equal_zarr_pythons(group):
    root, theirs = ours.open(group), zarr_python.open_group(group, mode="r")
    for name in ["struct", "be_i8", "sparse"]:
        a, t = root[name], theirs[name]
        n = a.shape[0]
        rng = np.random.default_rng(2)
        bools = [rng.random(n) < 0.05, np.zeros(n, bool), np.ones(n, bool), np.ones(n - 1, bool)]
        outcomes = _check(a, t, ONE_D + bools, name)
        # Both sides agree on what works and what is refused, and a good share works.
        assert outcomes.count("equal") > 40 and outcomes.count("raised") > 10, outcomes
        for sel in [[3, 100, 2], slice(5, 500, 13), 17, rng.random(n) < 0.3]:
            _same(lambda: a.get_orthogonal_selection(sel), lambda: t.get_orthogonal_selection(sel), (name, sel))
        for sel in [([3, 100, 2],), np.array([7, 7, 0]), 4]:
            _same(lambda: a.get_coordinate_selection(sel), lambda: t.get_coordinate_selection(sel), (name, sel))
        m = rng.random(n) < 0.1
        _same(lambda: a.get_mask_selection(m), lambda: t.get_mask_selection(m), name)
        _same(lambda: a.get_basic_selection(slice(10, 30, 4)), lambda: t.get_basic_selection(slice(10, 30, 4)), name)


def test_multidimensional_selections_equal_zarr_pythons(group):
    root, theirs = ours.open(group), zarr_python.open_group(group, mode="r")
    for name in ["f4_2d", "u2_3d"]:
        a, t = root[name], theirs[name]
        rng = np.random.default_rng(3)
        b0 = rng.random(a.shape[0]) < 0.2
        b1 = np.array([True, False, True] + [False] * (a.shape[1] - 3))
        sels = [
            5, -1, (5, 2), (10, 20), (slice(10, 20), 2), (slice(None), -1), (..., 1), (1, ...),
            ([1, 5, 9], 2), ([1, 5], [2, 0]), ([[1, 5], [7, 8]], 1), (np.array([4, 4, 0]), slice(0, 2)),
            ([1, 5], slice(None)), (b0, slice(1, 3)), (b0, b1), ([1, 5], [0, 2]), (slice(None, None, 3), [1, 0]),
            (slice(None), slice(None), 1), (1, 2, 3, 4), (600, 0), (0, 9), ([600], 0), (slice(None, None, -1), 0),
            (..., ...), (np.int64(3), [1, 2]), (0.5, 1), (slice(1, 3), -1), (-1, slice(None)), (1, 1, 1),
        ]
        if a.ndim == 3:
            sels += [([1, 2], [0, 1], [3, 4]), (5, slice(1, 3), slice(None, None, 2)), ([9, 1], 0, [4, 0])]
        outcomes = _check(a, t, sels, name)
        assert outcomes.count("equal") > 25 and outcomes.count("raised") > 10, outcomes
        mask = rng.random(a.shape) < 0.1
        _same(lambda: a.vindex[mask], lambda: t.vindex[mask], name)
        _same(lambda: a.get_mask_selection(mask), lambda: t.get_mask_selection(mask), name)
        _same(lambda: a.get_orthogonal_selection((b0, [0, 2])), lambda: t.get_orthogonal_selection((b0, [0, 2])), name)


def test_fields_equal_zarr_pythons(group):
    a, t = ours.open(group)["struct"], zarr_python.open_group(group, mode="r")["struct"]
    sels = [
        "id", "pos", "nested", ["label", "id"], ["pos"], (slice(0, 3), "pos"), (5, "pos"), (5, "id"),
        (5, ["id", "label"]), (slice(10, 200, 9), "nested"), ([1, 5, 9], "id"), ("id", slice(4, 8)),
        ("nope",), (slice(None), "nope"), ([], ), (0, "label", "id"),
    ]
    # zarr-python's vindex cannot select a field that has a shape of its own (below).
    outcomes = _check(a, t, sels, "struct", skip_vindex=("pos",))
    assert outcomes.count("equal") > 15, outcomes
    for f in ["id", ["pos", "label"]]:
        _same(lambda: a.get_orthogonal_selection([3, 1], fields=f), lambda: t.get_orthogonal_selection([3, 1], fields=f), f)
        _same(lambda: a.get_basic_selection(slice(2, 9), fields=f), lambda: t.get_basic_selection(slice(2, 9), fields=f), f)
    # A field of an array without fields.
    _same(lambda: ours.open(group)["be_i8"]["x"], lambda: zarr_python.open_group(group, mode="r")["be_i8"]["x"], "be_i8")
    # Where zarr-python 2.18 fails reshaping its own output (`cannot reshape`), ours returns
    # the array the selection means.
    with pytest.raises(ValueError):
        t.vindex[[1, 5], "pos"]
    got = a.vindex[[1, 5], "pos"]
    assert got.shape == (2, 2) and got.tobytes() == t[:]["pos"][[1, 5]].tobytes()


def test_a_zero_dimensional_array_selects_as_zarr_python(group):
    a, t = ours.open(group)["zero_d"], zarr_python.open_group(group, mode="r")["zero_d"]
    for sel in [(), ..., 0, slice(None), (0, 0)]:
        _same(lambda: a[sel], lambda: t[sel], sel)
    assert np.asarray(a).shape == () and int(np.asarray(a)) == 42


def test_asarray_iteration_and_out_equal_zarr_pythons(group):
    root, theirs = ours.open(group), zarr_python.open_group(group, mode="r")
    for name in ["struct", "f4_2d", "be_i8", "u2_3d", "sparse"]:
        a, t = root[name], theirs[name]
        x, y = np.asarray(a), np.asarray(t)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
        assert np.array(a).tobytes() == y.tobytes()
        assert [r.tobytes() for r in a] == [np.asarray(r).tobytes() for r in t], name
        assert [r.tobytes() for r in a.islice(90, 200)] == [np.asarray(r).tobytes() for r in t.islice(90, 200)], name
        assert (a.nchunks, a.cdata_shape, a.nbytes, a.itemsize) == (t.nchunks, t.cdata_shape, t.nbytes, t.itemsize)
    f = root["f4_2d"]
    assert np.asarray(f, dtype="f8").dtype == np.float64
    assert np.array_equal(np.asarray(f, dtype="f8"), np.asarray(theirs["f4_2d"], dtype="f8"))
    out = np.zeros((3, 7), "<f4")
    assert f.get_basic_selection(slice(2, 5), out=out) is out
    assert out.tobytes() == theirs["f4_2d"][2:5].tobytes()
    with pytest.raises(ValueError):
        f.get_basic_selection(slice(2, 6), out=out)


def test_scattered_rows_read_only_their_chunks(group, tmp_path):
    # A chunk nobody asked for may be corrupt: reading rows around it must not decode it.
    import os
    import shutil

    d = str(tmp_path / "g.zarr")
    shutil.copytree(group, d)
    with open(os.path.join(d, "be_i8", "5"), "r+b") as f:
        f.seek(20)
        f.write(b"\xff" * 40)
    a, t = ours.open(d)["be_i8"], zarr_python.open_group(group, mode="r")["be_i8"]
    sel = [3, 760, 101, 249, 300, 3]
    assert a[sel].tobytes() == t[sel].tobytes()
    assert a.oindex[np.isin(np.arange(777), sel)].tobytes() == t.oindex[np.isin(np.arange(777), sel)].tobytes()
    with pytest.raises(roverlog.FormatError, match="be_i8"):
        a[[3, 260]]
