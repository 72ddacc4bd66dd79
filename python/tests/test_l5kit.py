"""roverlog.l5kit against l5kit 1.5.0 itself (issue 27): every public method of
`ChunkedDataset` (constructor, `open`, `__str__`, `get_scene_dataset`, the arrays before and
after opening), the dtypes and the interval helpers, on the L5Kit scene in tests/data and on
a three-scene dataset made from it.

l5kit is installed without its dependencies (scripts/requirements-nodeps.txt: it pins
numpy 1.19 and torch < 2); its `l5kit.data` package imports the map API (pymap3d,
protobuf), so the test loads the two modules `ChunkedDataset` lives in, `zarr_dataset`
and `filter` (numpy, zarr-python, prettytable), under an empty `l5kit.data` package."""
import importlib.util
import os
import pickle
import shutil
import sys
import types
import warnings

import numpy as np
import pytest
import zarr as zarr_python

import roverlog
import roverlog.l5kit as ours

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = os.path.join(ROOT, "tests", "data", "l5kit_single_scene.zarr")


def _l5kit():
    spec = importlib.util.find_spec("l5kit")
    assert spec is not None, "l5kit is not installed: run scripts/py-env.sh (scripts/requirements-nodeps.txt)"
    if "l5kit.data" not in sys.modules:
        data = types.ModuleType("l5kit.data")
        data.__path__ = [os.path.join(spec.submodule_search_locations[0], "data")]
        sys.modules["l5kit.data"] = data
    import l5kit.data.filter as filt
    import l5kit.data.zarr_dataset as zd
    return zd, filt


theirs, their_filter = _l5kit()
# l5kit and ours warn alike (compared where it matters); not noise for the test log.
pytestmark = pytest.mark.filterwarnings("ignore:zarr dataset path:RuntimeWarning")


def _caught(f):
    """`f()` and the warnings it gave, as (category, message) pairs."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = f()
    return out, [(x.category, str(x.message)) for x in w]


def _same_array(x, y, what):
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape, (what, x.dtype, y.dtype, x.shape, y.shape)
    assert x.tobytes() == y.tobytes(), what


def _same_dataset(a, b, what):
    for name in ["scenes", "frames", "agents", "tl_faces"]:
        _same_array(getattr(a, name), getattr(b, name), (what, name))


@pytest.fixture(scope="module")
def three_scenes(tmp_path_factory):
    """The fixture's scene cut into three (frames 0-79, 80-169, 170-247), written with
    zarr-python in L5Kit's layout."""
    path = str(tmp_path_factory.mktemp("l5") / "three.zarr")
    src = zarr_python.open_group(SCENE, mode="r")
    g = zarr_python.open_group(path, mode="w")
    scenes = np.resize(src["scenes"][:], 3)
    frames = src["frames"][:]
    for k, (a, b) in enumerate([(0, 80), (80, 170), (170, len(frames))]):
        scenes[k]["frame_index_interval"] = (a, b)
        scenes[k]["start_time"], scenes[k]["end_time"] = frames[a]["timestamp"], frames[b - 1]["timestamp"]
        scenes[k]["host"] = f"host-{k}"
    for name, data in [("scenes", scenes), ("frames", frames), ("agents", src["agents"][:]),
                       ("traffic_light_faces", src["traffic_light_faces"][:])]:
        g.create_dataset(name, data=data, chunks=(1000,), compressor=src[name].compressor)
    g.attrs.update(src.attrs.asdict())
    return path


def test_dtypes_and_constants_are_l5kits():
    for name in ["SCENE_DTYPE", "FRAME_DTYPE", "AGENT_DTYPE", "TL_FACE_DTYPE"]:
        assert np.dtype(getattr(ours, name)) == np.dtype(getattr(theirs, name)), name
    for name in ["FORMAT_VERSION", "FRAME_ARRAY_KEY", "AGENT_ARRAY_KEY", "SCENE_ARRAY_KEY", "TL_FACE_ARRAY_KEY",
                 "FRAME_CHUNK_SIZE", "AGENT_CHUNK_SIZE", "SCENE_CHUNK_SIZE", "TL_FACE_CHUNK_SIZE"]:
        assert getattr(ours, name) == getattr(theirs, name), name


def test_a_new_dataset_is_l5kits_before_it_is_opened(tmp_path):
    for path in [SCENE, "", str(tmp_path / "missing.zarr"), str(tmp_path), "plain"]:
        a, wa = _caught(lambda: ours.ChunkedDataset(path, key="k"))
        b, wb = _caught(lambda: theirs.ChunkedDataset(path, key="k"))
        assert wa == wb, path
        assert (a.path, a.key) == (b.path, b.key)
        _same_dataset(a, b, path)
        sa, wa = _caught(lambda: str(a))
        sb, wb = _caught(lambda: str(b))
        assert sa == sb and wa == wb, (sa, sb)


@pytest.mark.parametrize("cached", [True, False])
def test_open_gives_l5kits_arrays_and_summary(cached, three_scenes):
    for path in [SCENE, three_scenes]:
        a = ours.ChunkedDataset(path)
        assert a.open(cached=cached, cache_size_bytes=10**6) is a
        b = theirs.ChunkedDataset(path).open(cached=cached, cache_size_bytes=10**6)
        _same_dataset(a, b, path)
        assert isinstance(a.root, roverlog.zarr.Group) and a.root.attrs == dict(b.root.attrs)
        sa, wa = _caught(lambda: str(a))
        sb, wb = _caught(lambda: str(b))
        assert sa == sb and wa == wb, f"\n{sa}\n{sb}"
        # The arrays index as l5kit code indexes them (zarr-python's rules).
        for name in ["scenes", "frames", "agents", "tl_faces"]:
            x, y = getattr(a, name), getattr(b, name)
            for sel in [slice(2, 9), -1, [0, -1, 0], (slice(0, 3), x.dtype.names[0])]:
                _same_array(x[sel], y[sel], (name, sel))
        again = pickle.loads(pickle.dumps(a))
        _same_dataset(again, b, "pickled")


def test_get_scene_dataset_is_l5kits(three_scenes):
    for path in [SCENE, three_scenes]:
        a = ours.ChunkedDataset(path).open()
        b = theirs.ChunkedDataset(path).open()
        for k in range(len(b.scenes)):
            sa, wa = _caught(lambda: a.get_scene_dataset(k))
            sb, wb = _caught(lambda: b.get_scene_dataset(k))
            assert wa == wb, (wa, wb)
            _same_dataset(sa, sb, (path, k))
            assert all(isinstance(getattr(sa, n), np.ndarray) for n in ["scenes", "frames", "agents", "tl_faces"])
            assert str(sa) == str(sb)
            # Scene within scene, and pickled.
            _same_dataset(sa.get_scene_dataset(0), sb.get_scene_dataset(0), (path, k, 0))
            _same_dataset(pickle.loads(pickle.dumps(sa)), sb, (path, k, "pickled"))
        with pytest.raises(ValueError) as ea:
            a.get_scene_dataset(len(b.scenes))
        with pytest.raises(ValueError) as eb:
            b.get_scene_dataset(len(b.scenes))
        assert str(ea.value) == str(eb.value)
    # Rebased: the middle scene of three starts its frames, agents and faces at 0.
    mid = ours.ChunkedDataset(three_scenes).open().get_scene_dataset(1)
    assert mid.scenes["frame_index_interval"].tolist() == [[0, 90]]
    assert mid.frames["agent_index_interval"][0][0] == 0 and mid.frames["agent_index_interval"][-1][1] == len(mid.agents)


def test_interval_helpers_are_l5kits(three_scenes):
    b = theirs.ChunkedDataset(three_scenes).open()
    scenes, frames = b.scenes[:], b.frames[:]
    for args in [(scenes[1],), (scenes[0], scenes[2])]:
        assert ours.get_frames_slice_from_scenes(*args) == their_filter.get_frames_slice_from_scenes(*args)
    for args in [(frames[7],), (frames[3], frames[200])]:
        assert ours.get_agents_slice_from_frames(*args) == their_filter.get_agents_slice_from_frames(*args)
        assert ours.get_tl_faces_slice_from_frames(*args) == their_filter.get_tl_faces_slice_from_frames(*args)


def test_missing_arrays_as_l5kit_reports_them(tmp_path):
    no_faces = str(tmp_path / "no_faces.zarr")
    shutil.copytree(SCENE, no_faces)
    shutil.rmtree(os.path.join(no_faces, "traffic_light_faces"))
    a, wa = _caught(lambda: ours.ChunkedDataset(no_faces).open())
    b, wb = _caught(lambda: theirs.ChunkedDataset(no_faces).open())
    assert wa == wb and len(wa) == 1
    _same_dataset(a, b, "no faces")
    no_agents = str(tmp_path / "no_agents.zarr")
    shutil.copytree(SCENE, no_agents)
    shutil.rmtree(os.path.join(no_agents, "agents"))
    with pytest.raises(KeyError):
        theirs.ChunkedDataset(no_agents).open()
    with pytest.raises(roverlog.MissingKeyError, match=f'{no_agents}: no "agents" array'):
        ours.ChunkedDataset(no_agents).open()
    with pytest.raises(ValueError, match="read-only"):
        ours.ChunkedDataset(SCENE).open(mode="a")
    with pytest.raises(ValueError, match="initialize"):
        ours.ChunkedDataset(str(tmp_path / "new.zarr")).initialize()
