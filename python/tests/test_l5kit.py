"""roverlog.l5kit against l5kit 1.5.0 itself (issue 27): every public method of
`ChunkedDataset` (constructor, `open`, `__str__`, `get_scene_dataset`, the arrays before and
after opening), the dtypes, and every public function and constant of `l5kit.data.filter`
and `l5kit.data.labels`, on the L5Kit scene in tests/data and on a three-scene dataset made
from it.

l5kit is installed without its dependencies (scripts/requirements-nodeps.txt: it pins
numpy 1.19 and torch < 2); its `l5kit.data` package imports the map API (pymap3d,
protobuf), so the test loads the modules `ChunkedDataset` and the filters live in,
`zarr_dataset`, `filter` and `labels` (numpy, zarr-python, prettytable), under an empty
`l5kit.data` package."""
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
    with pytest.raises(roverlog.MissingKeyError, match=f"{no_agents}: no 'agents' array"):
        ours.ChunkedDataset(no_agents).open()
    with pytest.raises(ValueError, match="read-only"):
        ours.ChunkedDataset(SCENE).open(mode="a")
    with pytest.raises(ValueError, match="initialize"):
        ours.ChunkedDataset(str(tmp_path / "new.zarr")).initialize()


# l5kit.data.filter and l5kit.data.labels: ours against l5kit's, value by value, on numpy
# arrays, on our dataset's arrays and on zarr-python's; and l5kit's own functions on ours.

def _their_labels():
    import l5kit.data.labels as labels
    return labels


def _same_list(xs, ys, what):
    assert len(xs) == len(ys), (what, len(xs), len(ys))
    for k, (x, y) in enumerate(zip(xs, ys)):
        _same_array(x, y, (what, k))


def test_the_filter_module_is_l5kits():
    import inspect

    labels = _their_labels()
    for name in ["PERCEPTION_LABELS", "PERCEPTION_LABEL_TO_INDEX", "TL_FACE_LABELS", "TL_FACE_LABEL_TO_INDEX"]:
        assert getattr(ours, name) == getattr(labels, name), name
    for name in ["PERCEPTION_LABELS_TO_KEEP", "PERCEPTION_LABEL_INDICES_TO_KEEP"]:
        assert getattr(ours, name) == getattr(their_filter, name), name
    public = [n for n, f in inspect.getmembers(their_filter, inspect.isfunction)
              if f.__module__ == their_filter.__name__ and not n.startswith("_")]
    assert len(public) == 10, public
    for name in public:
        mine, theirs_ = inspect.signature(getattr(ours, name)), inspect.signature(getattr(their_filter, name))
        assert [(p.name, p.kind, p.default) for p in mine.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in theirs_.parameters.values()], name


def test_importing_ours_imports_no_l5kit():
    import subprocess

    code = "import sys, roverlog.l5kit as l; l.filter_agents_by_labels; assert 'l5kit' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.fixture(scope="module", params=["scene", "three"])
def datasets(request, three_scenes):
    path = SCENE if request.param == "scene" else three_scenes
    return ours.ChunkedDataset(path).open(), theirs.ChunkedDataset(path).open()


def _agent_inputs(a, b):
    """The agents as each side may pass them: numpy, our array, zarr-python's."""
    return {"numpy": b.agents[:], "ours": a.agents, "zarr": b.agents}


def _fails_alike(f, a, b, what):
    """l5kit's filters that select rows by a Boolean mask fail on zarr-python's arrays (its
    docstrings say not to pass them): on ours they fail the same way."""
    with pytest.raises(IndexError) as on_zarr:
        f(b)
    with pytest.raises(IndexError) as on_ours:
        f(a)
    assert "expected integer or slice" in str(on_zarr.value) and "expected integer or slice" in str(on_ours.value), what


def test_filter_agents_by_labels_distance_and_track_id_are_l5kits(datasets):
    a, b = datasets
    _fails_alike(their_filter.filter_agents_by_labels, a.agents, b.agents, "labels")
    _fails_alike(lambda x: their_filter.filter_agents_by_distance(x, (0.0, 0.0), 1e9), a.agents, b.agents, "distance")
    _fails_alike(lambda x: their_filter.filter_agents_by_track_id(x, 1), a.agents, b.agents, "track_id")
    agents = b.agents[:]
    frames = b.frames[:]
    for name, x in _agent_inputs(a, b).items():
        for th in [0.1, 0.5, 0.9]:
            want = their_filter.filter_agents_by_labels(agents, th)
            _same_array(ours.filter_agents_by_labels(x, th), want, (name, th))
        _same_array(ours.filter_agents_by_labels(x), their_filter.filter_agents_by_labels(agents), name)
        for k, dist in [(0, 5.0), (100, 30.0), (-1, 1e9), (7, 0.0)]:
            centroid = frames[k]["ego_translation"][:2]
            want = their_filter.filter_agents_by_distance(agents, centroid, dist)
            _same_array(ours.filter_agents_by_distance(x, centroid, dist), want, (name, k, dist))
        ids = agents["track_id"]
        for track in [ids[0], ids[len(ids) // 2], ids.max(), ids.max() + 1]:
            want = their_filter.filter_agents_by_track_id(agents, track)
            _same_array(ours.filter_agents_by_track_id(x, track), want, (name, track))
        assert len(ours.filter_agents_by_track_id(x, ids[0])) > 1


def test_filter_agents_and_faces_by_frames_are_l5kits(datasets):
    a, b = datasets
    agents, faces, frames = b.agents[:], b.tl_faces[:], b.frames[:]
    selections = [slice(10, 20), slice(0, 0), slice(None), [0, len(frames) - 1], [5, 3, 5], 7, -1]
    for sel in selections:
        f = frames[sel]
        want = their_filter.filter_agents_by_frames(f, agents)
        for name, x in _agent_inputs(a, b).items():
            _same_list(ours.filter_agents_by_frames(f, x), want, (name, sel))
        # Frames as our array, whole, and a row of it.
        _same_list(ours.filter_agents_by_frames(a.frames[sel], a.agents), want, ("our frames", sel))
        _same_list(their_filter.filter_agents_by_frames(a.frames[sel], a.agents), want, ("l5kit on ours", sel))
        if np.ndim(f) == 0:
            # l5kit reads one frame's faces by iterating the row itself, and fails; so do we.
            with pytest.raises(IndexError):
                their_filter.filter_tl_faces_by_frames(f, faces)
            with pytest.raises(IndexError):
                ours.filter_tl_faces_by_frames(f, a.tl_faces)
            continue
        want = their_filter.filter_tl_faces_by_frames(f, faces)
        for x in [faces, a.tl_faces, b.tl_faces]:
            _same_list(ours.filter_tl_faces_by_frames(f, x), want, ("faces", sel))
        _same_list(their_filter.filter_tl_faces_by_frames(a.frames[sel], a.tl_faces), want, ("l5kit on ours", sel))
    _same_list(ours.filter_agents_by_frames(a.frames, a.agents), their_filter.filter_agents_by_frames(frames, agents),
               "all frames")


def test_filter_by_frames_with_odd_intervals_is_l5kits(datasets):
    """Intervals that end before they start, run past the end, are negative or far apart give
    what the slices give in l5kit, also where ours reads the agents in one block."""
    a, b = datasets
    agents = b.agents[:]
    f = b.frames[20:30].copy()
    n = len(agents)
    odd = f["agent_index_interval"]
    odd[1] = odd[1][::-1]                # ends before it starts
    odd[2] = (n - 3, n + 50)             # runs past the end
    odd[3] = (n + 10, n + 20)            # starts past the end
    odd[4] = (odd[4][0], odd[4][0])      # empty
    for variant in ["odd", "negative", "far"]:
        g = f.copy()
        if variant == "negative":
            g["agent_index_interval"][5] = (-10, -2)
        if variant == "far":
            g = np.concatenate([b.frames[:2], b.frames[-2:]])
        want = their_filter.filter_agents_by_frames(g, agents)
        for x in [a.agents, b.agents, agents]:
            _same_list(ours.filter_agents_by_frames(g, x), want, variant)


def test_filter_tl_faces_by_status_and_other_agents_ids_are_l5kits(datasets):
    a, b = datasets
    faces = b.tl_faces[:]
    _fails_alike(lambda x: their_filter.filter_tl_faces_by_status(x, "ACTIVE"), a.tl_faces, b.tl_faces, "status")
    for status in ours.TL_FACE_LABELS:
        want = their_filter.filter_tl_faces_by_status(faces, status)
        for x in [faces, a.tl_faces, b.tl_faces]:
            _same_array(ours.filter_tl_faces_by_status(x, status), want, status)
            # l5kit's own on what ours returns.
            _same_array(their_filter.filter_tl_faces_by_status(ours.filter_tl_faces_by_status(x, status), status),
                        want, status)
    with pytest.raises(KeyError):
        their_filter.filter_tl_faces_by_status(faces, "nope")
    with pytest.raises(KeyError):
        ours.filter_tl_faces_by_status(faces, "nope")
    ids = b.agents[:]["track_id"]
    frames = b.frames[:]
    present = a.agents[ours.get_agents_slice_from_frames(frames[40])]["track_id"]
    past = a.agents[ours.get_agents_slice_from_frames(frames[30], frames[39])]["track_id"]
    for selected, most in [(present[0], 10), (None, 5), (ids.max() + 1, 1000), (present[1], 0)]:
        mine = ours.get_other_agents_ids(past, present, selected, most)
        want = their_filter.get_other_agents_ids(past, present, selected, most)
        assert mine == want and all(type(m) is type(w) for m, w in zip(mine, want)), (selected, most)


def test_filter_agents_by_frames_reads_neighbouring_frames_at_once(datasets):
    """Frames close together: one read of our array (l5kit reads per frame); far apart: per
    frame, not the whole span between them."""
    a, b = datasets

    class Counted:
        def __init__(self, arr):
            self.arr, self.reads = arr, []

        def __getitem__(self, sel):
            self.reads.append(sel)
            return self.arr[sel]

    frames = b.frames[:]
    near = Counted(a.agents)
    got = ours.filter_agents_by_frames(frames[10:60], near)
    _same_list(got, their_filter.filter_agents_by_frames(frames[10:60], b.agents[:]), "near")
    assert len(near.reads) == 1, near.reads
    far = Counted(a.agents)
    ours.filter_agents_by_frames(frames[[0, -1]], far)
    assert len(far.reads) == 2 and all(s.stop - s.start < len(b.agents) // 4 for s in far.reads), far.reads
