"""roverlog.zarr and roverlog.l5kit against zarr-python 2 on arrays it writes (several
chunks, odd selections, structured and big-endian dtypes, missing chunks) and on the L5Kit
scene in tests/data."""
import os
import pickle

import numcodecs
import numpy as np
import pytest
import zarr as zarr_python

import roverlog.l5kit as l5
import roverlog.zarr as ours

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = os.path.join(ROOT, "tests", "data", "l5kit_single_scene.zarr")

STRUCT = np.dtype([("id", "<u8"), ("pos", "<f4", (2,)), ("label", "<i2"), ("nested", [("a", "<u1"), ("b", ">i4")])])


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("z") / "g.zarr")
    g = zarr_python.open_group(d, mode="w")
    rng = np.random.default_rng(0)
    made = {}
    s = np.zeros(1000, STRUCT)
    s["id"] = np.arange(1000)
    s["pos"] = rng.standard_normal((1000, 2))
    s["label"] = rng.integers(-5, 5, 1000)
    s["nested"]["a"] = np.arange(1000) % 256
    s["nested"]["b"] = -np.arange(1000)
    made["struct"] = s
    made["f4_2d"] = rng.standard_normal((513, 7)).astype("<f4")
    made["be_i8"] = np.arange(777, dtype=">i8") * -3
    made["u2_3d"] = rng.integers(0, 60000, (101, 3, 5), dtype=np.uint16)
    for name, a in made.items():
        comp = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE) if name != "u2_3d" else numcodecs.Zstd()
        g.create_dataset(name, data=a, chunks=(97,) + a.shape[1:], compressor=comp)
    sparse = g.create_dataset("sparse", shape=(300,), chunks=(50,), dtype="<f8", fill_value=-1.5)
    sparse[120:180] = 7.0
    made["sparse"] = sparse[:]
    g.attrs["note"] = "grüße"
    return d, made


def test_arrays_equal_zarr_pythons(arrays):
    d, made = arrays
    root = ours.open(d)
    theirs = zarr_python.open_group(d, mode="r")
    assert root.attrs == {"note": "grüße"}
    assert sorted(root.array_keys()) == sorted(made)
    for name in made:
        a, t = root[name], theirs[name]
        assert a.shape == t.shape and a.chunks == t.chunks and a.dtype == t.dtype, name
        for sel in [slice(None), slice(5, 300), slice(96, 98), slice(3, 900, 7), 0, -1, 42, slice(250, 1000)]:
            x, y = a[sel], t[sel]
            assert x.dtype == y.dtype and x.shape == y.shape, (name, sel)
            assert x.tobytes() == y.tobytes(), (name, sel)
        assert a[...].tobytes() == t[...].tobytes()
    again = pickle.loads(pickle.dumps(root["struct"]))
    assert again[10:20].tobytes() == theirs["struct"][10:20].tobytes()


def test_the_l5kit_scene_reads_as_zarr_python_reads_it():
    ds = l5.ChunkedDataset(SCENE).open()
    theirs = zarr_python.open_group(SCENE, mode="r")
    for attr, name in [("scenes", "scenes"), ("frames", "frames"), ("agents", "agents"), ("tl_faces", "traffic_light_faces")]:
        a, t = getattr(ds, attr), theirs[name]
        assert a.dtype == t.dtype and a.shape == t.shape, name
        assert a[:].tobytes() == t[:].tobytes(), name
    scene = ds.scenes[0]
    frames = ds.frames[l5.get_frames_slice_from_scenes(scene)]
    assert len(frames) == scene["frame_index_interval"][1] - scene["frame_index_interval"][0]
    agents = ds.agents[l5.get_agents_slice_from_frames(frames[3], frames[9])]
    want = theirs["agents"][frames[3]["agent_index_interval"][0]:frames[9]["agent_index_interval"][1]]
    assert agents.tobytes() == want.tobytes()
    faces = ds.tl_faces[l5.get_tl_faces_slice_from_frames(frames[5])]
    assert faces.dtype == theirs["traffic_light_faces"].dtype
    assert pickle.loads(pickle.dumps(ds)).agents[:5].tobytes() == theirs["agents"][:5].tobytes()


def test_bad_input_raises(arrays, tmp_path):
    d, _ = arrays
    root = ours.open(d)
    with pytest.raises(IndexError):
        root["f4_2d"][10000]
    with pytest.raises(IndexError):
        root["f4_2d"][::-1]
    with pytest.raises(FileNotFoundError):
        ours.open(str(tmp_path / "nothing"))
    with pytest.raises(ValueError):
        ours.open(d, mode="w")
    # A corrupt chunk: the library's message, as roverlog.Error (a ValueError).
    chunk = os.path.join(d, "f4_2d", "1.0")
    with open(chunk, "r+b") as f:
        f.seek(20)
        f.write(b"\xff" * 40)
    with pytest.raises(ValueError):
        ours.open(d)["f4_2d"][:]


def test_a_whole_read_decodes_every_chunk_again(tmp_path):
    # The benchmark compares whole-array reads with zarr-python's, which caches nothing: ours
    # must not serve a repeat from decoded chunks either, even with l5kit's large cache budget.
    d = str(tmp_path / "a.zarr")
    data = np.arange(1000 * 3, dtype="<f8").reshape(1000, 3)
    zarr_python.open_array(d, mode="w", shape=data.shape, chunks=(100, 3), dtype=data.dtype,
                           compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))[:] = data
    a = ours.Array(d, cache_bytes=1 << 30)
    assert a[:].tobytes() == data.tobytes()
    assert a[:].tobytes() == data.tobytes()
    with open(os.path.join(d, "3.0"), "r+b") as f:
        f.seek(20)
        f.write(b"\xff" * 40)
    with pytest.raises(ValueError):
        a[:]
