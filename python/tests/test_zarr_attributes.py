"""roverlog.zarr's arrays and groups describe themselves as zarr-python 2's do (issue 27):
every public property of `zarr.Array` and `zarr.Group` and their reading methods, attribute by
attribute, on the L5Kit scene in tests/data and on arrays zarr-python writes here (every
compressor the reader decodes, a filter, fill values of every kind, missing chunks, a 0-d
array, nested groups). `compressor` is numcodecs' own codec; without numcodecs, a
`roverlog.zarr.Codec` with numcodecs' `repr` and `get_config()`."""
import os
import pickle
import sys

import numcodecs
import numpy as np
import pytest
import zarr as zarr_python

import roverlog
import roverlog.l5kit as l5
import roverlog.zarr as ours

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = os.path.join(ROOT, "tests", "data", "l5kit_single_scene.zarr")

# Where ours differs on purpose: the class names in `info` (ours are not zarr-python's).
OUR_TYPES = {"Type", "Store type"}
# zarr-python's Array/Group properties that are not read-only attributes, or that ours has under
# another form: none. Writing methods are not compared (ours are read-only).
WRITING = {"append", "astype", "resize", "view", "set_basic_selection", "set_block_selection",
           "set_coordinate_selection", "set_mask_selection", "set_orthogonal_selection", "array", "clear",
           "create", "create_dataset", "create_group", "create_groups", "empty", "empty_like", "full",
           "full_like", "move", "ones", "ones_like", "pop", "popitem", "require_dataset", "require_group",
           "require_groups", "setdefault", "update", "zeros", "zeros_like"}

COMPRESSORS = {
    "blosc_lz4": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    "blosc_zstd_bit": numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
    "blosc_zlib_none": numcodecs.Blosc(cname="zlib", clevel=1, shuffle=numcodecs.Blosc.NOSHUFFLE),
    "blosc_lz4hc": numcodecs.Blosc(cname="lz4hc", clevel=9, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=256),
    "zstd": numcodecs.Zstd(level=4),
    "zlib": numcodecs.Zlib(level=6),
    "gzip": numcodecs.GZip(level=2),
    "lz4": numcodecs.LZ4(acceleration=3),
    "raw": None,
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A group zarr-python wrote: one array per compressor, a Delta filter, fill values of every
    kind (some arrays never written, so their chunks are missing), a 0-d array, nested groups,
    attributes on groups and arrays."""
    d = str(tmp_path_factory.mktemp("za") / "g.zarr")
    g = zarr_python.open_group(d, mode="w")
    rng = np.random.default_rng(1)
    for name, comp in COMPRESSORS.items():
        g.create_dataset(name, data=rng.integers(0, 1000, (300, 3), dtype="<i4"), chunks=(70, 2), compressor=comp)
    g.create_dataset("delta", data=np.arange(500, dtype="<i8"), chunks=(64,), filters=[numcodecs.Delta("<i8")])
    g.create_dataset("zero_d", data=np.array(2.5), chunks=())
    partial = g.create_dataset("partial", shape=(100, 10), chunks=(30, 4), dtype="<f8", fill_value=np.nan)
    partial[40:70, 2:5] = 1.0
    for name, dtype, fill in [("f_inf", "<f4", -np.inf), ("f_pinf", "<f8", np.inf), ("i_none", "<i2", None),
                              ("c16", "<c16", 1 - 2j), ("b", "|b1", True), ("u", "<U3", "zz"), ("s", "|S3", b"q"),
                              ("m8", "<M8[s]", 0), ("struct", [("a", "<u2"), ("b", "<f4", (2,))], None)]:
        g.create_dataset(name, shape=(20,), chunks=(7,), dtype=dtype, fill_value=fill)
    filled = g.create_dataset("struct_fill", shape=(20,), chunks=(7,), dtype=[("a", "<u2"), ("b", "<f4", (2,))],
                              fill_value=np.array((7, (1.5, -2.0)), dtype=[("a", "<u2"), ("b", "<f4", (2,))])[()])
    filled[3:9] = np.zeros(6, filled.dtype)
    sub = g.create_group("sub")
    sub.attrs["level"] = 1
    deeper = sub.create_group("deeper")
    x = deeper.create_dataset("x", data=np.arange(9, dtype="<u8"), chunks=(4,))
    x.attrs.update({"units": "m", "scale": [1, 2]})
    sub.create_group("nothing")
    g.attrs["note"] = "grüße"
    return d


def _array_paths(group):
    out = []
    group.visititems(lambda path, obj: out.append(path) if isinstance(obj, zarr_python.Array) else None)
    return out


def _same_value(x, y, what):
    if isinstance(y, np.generic) or isinstance(y, np.ndarray):
        assert type(x) is type(y) and x.dtype == y.dtype, (what, x, y)
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), (what, x, y)
    elif isinstance(y, float) and np.isnan(y):
        assert isinstance(x, float) and np.isnan(x), (what, x)
    else:
        assert type(x) is type(y) and x == y, (what, x, y)


def _same_codec(x, y, what):
    if y is None:
        assert x is None, what
        return
    assert repr(x) == repr(y) and x.get_config() == y.get_config() and x == y, (what, x, y)


def _same_info(x, y, what):
    ix, iy = x.info_items(), y.info_items()
    assert [k for k, _ in ix] == [k for k, _ in iy], (what, ix, iy)
    for (k, vx), (_, vy) in zip(ix, iy):
        if k in OUR_TYPES:
            assert vx.startswith("roverlog.zarr."), (what, k, vx)
        else:
            assert vx == vy, (what, k, vx, vy)
    # The text report: zarr-python's, but for the class names.
    want = repr(y.info)
    for k, v in iy:
        if k in OUR_TYPES:
            want = want.replace(v, dict(ix)[k])
    assert repr(x.info) == want, (what, repr(x.info), want)
    assert x.info._repr_html_().startswith('<table class="zarr-info">')


ARRAY_SAME = ["name", "basename", "path", "read_only", "shape", "chunks", "dtype", "order", "ndim", "size",
              "itemsize", "nbytes", "nbytes_stored", "cdata_shape", "nchunks", "nchunks_initialized",
              "initialized", "is_view", "write_empty_chunks", "synchronizer"]


def _same_array(a, t, what):
    for name in ARRAY_SAME:
        _same_value(getattr(a, name), getattr(t, name), (what, name))
    _same_value(a.fill_value, t.fill_value, (what, "fill_value"))
    _same_codec(a.compressor, t.compressor, (what, "compressor"))
    if t.filters is None:
        assert a.filters is None, what
    else:
        assert len(a.filters) == len(t.filters), what
        for f, g in zip(a.filters, t.filters):
            _same_codec(f, g, (what, "filters"))
    assert a.attrs.asdict() == t.attrs.asdict() and dict(a.attrs) == dict(t.attrs), what
    assert a.attrs.key == t.attrs.key and a.attrs.read_only, what
    assert a.meta_array.shape == t.meta_array.shape and a.meta_array.dtype == t.meta_array.dtype, what
    assert a.store.path == t.store.path and a.chunk_store == a.store, what
    assert a.store.listdir(a.path) == t.store.listdir(t.path), what
    assert a.store.getsize(a.path) == t.store.getsize(t.path), what
    assert a.digest() == t.digest() and a.hexdigest("md5") == t.hexdigest("md5"), what
    _same_info(a, t, what)
    if t.fill_value is not None or t.nchunks_initialized == t.nchunks:
        # (Without a fill value zarr-python leaves a missing chunk's rows uninitialised.)
        assert a[...].tobytes() == t[...].tobytes(), what


def _same_group(g, t, what):
    for name in ["name", "basename", "path", "read_only", "synchronizer"]:
        _same_value(getattr(g, name), getattr(t, name), (what, name))
    assert len(g) == len(t) and list(g) == list(t) and list(g.keys()) == list(t.keys()), what
    assert list(g.array_keys()) == list(t.array_keys()) and list(g.group_keys()) == list(t.group_keys()), what
    assert [k for k, _ in g.items()] == [k for k, _ in t.items()], what
    assert [v.name for v in g.values()] == [v.name for v in t.values()], what
    assert g.attrs.asdict() == t.attrs.asdict(), what
    assert g.store.path == t.store.path, what
    _same_info(g, t, what)
    for level in [None, 0, 1, 2]:
        assert repr(g.tree(level=level)) == repr(t.tree(level=level)), (what, level)
        assert bytes(g.tree(level=level)) == bytes(t.tree(level=level)), (what, level)
    for visit in ["visit", "visitkeys"]:
        mine, theirs = [], []
        getattr(g, visit)(mine.append)
        getattr(t, visit)(theirs.append)
        assert mine == theirs, (what, visit)
    mine, theirs = [], []
    g.visititems(lambda p, o: mine.append((p, o.name, type(o).__name__)))
    t.visititems(lambda p, o: theirs.append((p, o.name, type(o).__name__)))
    assert mine == theirs, what
    mine, theirs = [], []
    g.visitvalues(lambda o: mine.append(o.name))
    t.visitvalues(lambda o: theirs.append(o.name))
    assert mine == theirs, what
    # A visitor's first value other than None ends the walk and is returned.
    assert g.visit(lambda p: p if p.count("/") == 1 else None) == t.visit(lambda p: p if p.count("/") == 1 else None)
    for k in t.keys():
        assert getattr(g, k).name == getattr(t, k).name and g.get(k).name == t.get(k).name, (what, k)
    assert g.get("nope") is None and g.get("nope", 5) == 5


def test_every_public_zarr_python_attribute_exists():
    t = zarr_python.open_group(SCENE, mode="r")
    g = ours.open(SCENE)
    for mine, theirs in [(g, t), (g["agents"], t["agents"])]:
        names = {n for n in dir(type(theirs)) if not n.startswith("_")} - WRITING
        missing = sorted(n for n in names if not hasattr(mine, n))
        assert not missing, (type(theirs).__name__, missing)


def test_the_l5kit_scene_describes_itself_as_zarr_python(tmp_path):
    t = zarr_python.open_group(SCENE, mode="r")
    g = ours.open(SCENE)
    _same_group(g, t, "scene")
    for name in t.array_keys():
        _same_array(g[name], t[name], name)
        # Opened by its own directory: no name, path "".
        _same_array(ours.open(os.path.join(SCENE, name)), zarr_python.open(os.path.join(SCENE, name), mode="r"),
                    (name, "alone"))
    # The arrays of an l5kit ChunkedDataset are the group's (path "agents", name "/agents").
    ds = l5.ChunkedDataset(SCENE).open()
    for attr, name in [("agents", "agents"), ("frames", "frames"), ("scenes", "scenes"),
                       ("tl_faces", "traffic_light_faces")]:
        _same_array(getattr(ds, attr), t[name], ("dataset", name))
    again = pickle.loads(pickle.dumps(g["agents"]))
    assert again == g["agents"] and again.name == "/agents" and hash(again) == hash(g["agents"])
    assert pickle.loads(pickle.dumps(g)) == g and g["agents"] != g["frames"]


def test_written_arrays_describe_themselves_as_zarr_python(store):
    t = zarr_python.open_group(store, mode="r")
    g = ours.open(store)
    _same_group(g, t, "root")
    paths = _array_paths(t)
    assert len(paths) == len(COMPRESSORS) + 14, paths
    for p in paths:
        _same_array(g[p], t[p], p)
        _same_array(ours.open_array(os.path.join(store, *p.split("/"))),
                    zarr_python.open_array(os.path.join(store, *p.split("/")), mode="r"), (p, "alone"))
    for p in ["sub", "sub/deeper", "sub/nothing"]:
        _same_group(g[p], t[p], p)
        _same_group(ours.open_group(os.path.join(store, *p.split("/"))),
                    zarr_python.open_group(os.path.join(store, *p.split("/")), mode="r"), (p, "alone"))
    # What the fixture meant to cover is covered.
    assert g["partial"].nchunks_initialized < g["partial"].nchunks
    assert g["i_none"].nchunks_initialized == 0 and g["i_none"].fill_value is None
    assert isinstance(g["struct_fill"].fill_value, np.void)


def test_attributes_and_store_are_read_only(store):
    a = ours.open(store)["sub/deeper/x"]
    for write in [lambda: a.attrs.__setitem__("k", 1), lambda: a.attrs.update({"k": 1}), lambda: a.attrs.put({}),
                  lambda: a.store.__setitem__("k", b""), lambda: a.attrs.pop("units")]:
        with pytest.raises(PermissionError, match="read-only"):
            write()
    with open(os.path.join(store, ".zgroup"), "rb") as f:
        assert a.attrs["units"] == "m" and a.store[".zgroup"] == f.read()
    assert "sub/deeper/x/.zarray" in a.store and "sub/deeper/x/.zarray" in set(a.store)
    with pytest.raises(KeyError, match="no such key"):
        a.store["nope"]
    with pytest.raises(roverlog.FileError, match="no .zgroup"):
        ours.open_group(os.path.join(store, "zstd"))
    with pytest.raises(roverlog.FileError, match="no .zarray"):
        ours.open_array(store)
    with pytest.raises(AttributeError, match="nope"):
        ours.open(store).nope


def test_codecs_without_numcodecs_are_described_as_numcodecs_describes_them(store, monkeypatch):
    t = zarr_python.open_group(store, mode="r")
    theirs = {p: (t[p].compressor, t[p].filters) for p in _array_paths(t)}
    scene = zarr_python.open(SCENE, mode="r")["agents"]
    # `import numcodecs` fails, as where it is not installed.
    monkeypatch.setitem(sys.modules, "numcodecs", None)
    g = ours.open(store)
    for p, (comp, filters) in list(theirs.items()) + [("agents", (scene.compressor, None))]:
        a = g[p] if p != "agents" else ours.open(SCENE)["agents"]
        if comp is not None:
            assert isinstance(a.compressor, ours.Codec), p
        _same_codec(a.compressor, comp, p)
        if filters:
            assert all(isinstance(f, ours.Codec) for f in a.filters)
            for f, want in zip(a.filters, filters):
                _same_codec(f, want, (p, "filter"))
        assert a.compressor is None or a.compressor.codec_id == comp.codec_id
        # The info report is zarr-python's all the same.
        _same_info(a, t[p] if p != "agents" else scene, p)
