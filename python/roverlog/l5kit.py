"""L5Kit's dataset reading over `roverlog.zarr`, with l5kit's names (`l5kit.data`):

    from roverlog.l5kit import ChunkedDataset    # was: from l5kit.data import ChunkedDataset
    ds = ChunkedDataset("scenes/sample.zarr").open()
    ds.scenes, ds.frames, ds.agents, ds.tl_faces # arrays indexed as zarr-python's
    print(ds)                                    # l5kit's summary table
    one = ds.get_scene_dataset(3)                # one scene in memory, intervals rebased

and l5kit's dtypes (`SCENE_DTYPE`, `FRAME_DTYPE`, `AGENT_DTYPE`, `TL_FACE_DTYPE`) and the
functions and constants of `l5kit.data.filter` and `l5kit.data.labels` (`roverlog._l5kit_filter`),
which take these arrays or numpy ones and need no l5kit:

    from roverlog.l5kit import filter_agents_by_frames, filter_agents_by_labels
    per_frame = filter_agents_by_frames(ds.frames[10:20], ds.agents)
    cars = filter_agents_by_labels(per_frame[0], threshold=0.5)

(`filter_agents_by_labels`, `filter_agents_by_distance`, `filter_agents_by_track_id`,
`filter_agents_by_frames`, `filter_tl_faces_by_frames`, `filter_tl_faces_by_status`, `get_frames_slice_from_scenes`,
`get_agents_slice_from_frames`, `get_tl_faces_slice_from_frames`, `get_other_agents_ids`,
`PERCEPTION_LABELS`, `PERCEPTION_LABEL_TO_INDEX`, `TL_FACE_LABELS`, `TL_FACE_LABEL_TO_INDEX`,
`PERCEPTION_LABELS_TO_KEEP`, `PERCEPTION_LABEL_INDICES_TO_KEEP`).

Read-only: `initialize` (which creates a dataset) is refused. As in l5kit, a dataset without
`traffic_light_faces` opens with a `RuntimeWarning` and an empty `tl_faces`; one without
`scenes`, `frames` or `agents` is a `MissingKeyError` (a `KeyError`, as zarr-python's) naming
it. The opened arrays are the group's, as zarr-python opens them (`ds.agents.path` is
"agents", `ds.agents.name` "/agents").
"""
import os
import warnings

import numpy as np

from . import zarr
from ._l5kit_filter import (PERCEPTION_LABEL_INDICES_TO_KEEP, PERCEPTION_LABEL_TO_INDEX,  # noqa: F401
                            PERCEPTION_LABELS, PERCEPTION_LABELS_TO_KEEP, TL_FACE_LABEL_TO_INDEX,
                            TL_FACE_LABELS, filter_agents_by_distance, filter_agents_by_frames,
                            filter_agents_by_labels, filter_agents_by_track_id, filter_tl_faces_by_frames,
                            filter_tl_faces_by_status, get_agents_slice_from_frames,
                            get_frames_slice_from_scenes, get_other_agents_ids,
                            get_tl_faces_slice_from_frames)
from .errors import FormatError, MissingKeyError

FORMAT_VERSION = 2

FRAME_ARRAY_KEY = "frames"
AGENT_ARRAY_KEY = "agents"
SCENE_ARRAY_KEY = "scenes"
TL_FACE_ARRAY_KEY = "traffic_light_faces"

FRAME_CHUNK_SIZE = (10_000,)
AGENT_CHUNK_SIZE = (20_000,)
SCENE_CHUNK_SIZE = (10_000,)
TL_FACE_CHUNK_SIZE = (10_000,)

# The L5Kit schema (format version 2). The label probabilities hold one value per
# perception label (17), the face status one per traffic light face label (3).
SCENE_DTYPE = [
    ("frame_index_interval", np.int64, (2,)),
    ("host", "<U16"),
    ("start_time", np.int64),
    ("end_time", np.int64),
]
FRAME_DTYPE = [
    ("timestamp", np.int64),
    ("agent_index_interval", np.int64, (2,)),
    ("traffic_light_faces_index_interval", np.int64, (2,)),
    ("ego_translation", np.float64, (3,)),
    ("ego_rotation", np.float64, (3, 3)),
]
AGENT_DTYPE = [
    ("centroid", np.float64, (2,)),
    ("extent", np.float32, (3,)),
    ("yaw", np.float32),
    ("velocity", np.float32, (2,)),
    ("track_id", np.uint64),
    ("label_probabilities", np.float32, (17,)),
]
TL_FACE_DTYPE = [
    ("face_id", "<U16"),
    ("traffic_light_id", "<U16"),
    ("traffic_light_face_status", np.float32, (3,)),
]


class ChunkedDataset:
    """An L5Kit dataset: `open()` maps `scenes`, `frames`, `agents` and `tl_faces` to the
    zarr arrays on disk; before that they are empty arrays of the L5Kit dtypes."""

    def __init__(self, path, key=""):
        self.key = key
        self.path = path
        self.frames = np.empty(0, dtype=FRAME_DTYPE)
        self.scenes = np.empty(0, dtype=SCENE_DTYPE)
        self.agents = np.empty(0, dtype=AGENT_DTYPE)
        self.tl_faces = np.empty(0, dtype=TL_FACE_DTYPE)
        # l5kit's warnings, word for word: code may filter on them.
        if ".zarr" not in os.fspath(path):
            warnings.warn("zarr dataset path should end with .zarr (for now). Open will fail for this dataset!",
                          RuntimeWarning, stacklevel=2)
        if not os.path.exists(os.fspath(path) or "."):
            warnings.warn("zarr dataset path doesn't exist. Open will fail for this dataset!",
                          RuntimeWarning, stacklevel=2)

    def initialize(self, mode="w", num_scenes=0, num_frames=0, num_agents=0, num_tl_faces=0):
        raise ValueError(f"{self.path}: roverlog.l5kit reads datasets; creating one (initialize) needs l5kit")

    def open(self, mode="r", cached=True, cache_size_bytes=int(1e9)):
        """Opens the dataset read-only. With `cached`, decoded chunks that reads use only
        partly are kept, up to `cache_size_bytes` per array (l5kit keeps that much of the
        compressed chunks)."""
        if mode != "r":
            raise ValueError(f"roverlog.l5kit is read-only (mode {mode!r})")
        path = os.fspath(self.path)
        self.root = zarr.open(path)
        if not isinstance(self.root, zarr.Group):
            raise FormatError(f"{path}: an L5Kit dataset is a zarr group, not an array")
        budget = int(cache_size_bytes) if cached else 0

        def array(name):
            if name not in self.root:
                raise MissingKeyError(f"{path}: no {name!r} array (not an L5Kit dataset)")
            # As zarr-python opens them from the group: `path` "agents", `name` "/agents".
            return zarr.Array(os.path.join(path, name), cache_bytes=budget, _store=self.root.store, _key=name)

        self.frames = array(FRAME_ARRAY_KEY)
        self.agents = array(AGENT_ARRAY_KEY)
        self.scenes = array(SCENE_ARRAY_KEY)
        if TL_FACE_ARRAY_KEY in self.root:
            self.tl_faces = array(TL_FACE_ARRAY_KEY)
        else:
            warnings.warn(f"{TL_FACE_ARRAY_KEY} not found in {self.path}! "
                          f"You won't be able to use this zarr into an Ego/AgentDataset",
                          RuntimeWarning, stacklevel=2)
            self.tl_faces = np.empty((0,), dtype=TL_FACE_DTYPE)
        return self

    def __str__(self):
        fields = [
            "Num Scenes",
            "Num Frames",
            "Num Agents",
            "Num TR lights",
            "Total Time (hr)",
            "Avg Frames per Scene",
            "Avg Agents per Frame",
            "Avg Scene Time (sec)",
            "Avg Frame frequency",
        ]
        if len(self.frames) > 1:
            # The first 50 frames give the frame rate.
            times = np.diff(self.frames[:50]["timestamp"])
            frequency = np.mean(1 / (times / 1e9))
        else:
            warnings.warn(f"not enough frames({len(self.frames)}) to read the frequency, 10 will be set",
                          RuntimeWarning, stacklevel=2)
            frequency = 10
        n_scenes, n_frames, n_agents = len(self.scenes), len(self.frames), len(self.agents)
        values = [
            n_scenes,
            n_frames,
            n_agents,
            len(self.tl_faces),
            n_frames / max(frequency, 1) / 3600,
            n_frames / max(n_scenes, 1),
            n_agents / max(n_frames, 1),
            n_frames / max(n_scenes, 1) / frequency,
            frequency,
        ]
        return _table(fields, [f"{v:.2f}" if isinstance(v, float) else str(v) for v in values])

    def get_scene_dataset(self, scene_index):
        """Scene `scene_index` as a dataset in memory (numpy arrays): its frames, agents and
        traffic light faces, their intervals counted from the scene's first row."""
        if scene_index >= len(self.scenes):
            raise ValueError(f"scene index {scene_index} out of bound for dataset with {len(self.scenes)} scenes")
        scenes = np.array(self.scenes[scene_index:scene_index + 1])
        frame_slice = get_frames_slice_from_scenes(*scenes)
        frames = np.array(self.frames[frame_slice])
        agent_slice = get_agents_slice_from_frames(*frames[[0, -1]])
        tl_slice = get_tl_faces_slice_from_frames(*frames[[0, -1]])
        agents = np.array(self.agents[agent_slice])
        tl_faces = np.array(self.tl_faces[tl_slice])
        frames["agent_index_interval"] -= agent_slice.start
        frames["traffic_light_faces_index_interval"] -= tl_slice.start
        scenes["frame_index_interval"] -= frame_slice.start
        dataset = ChunkedDataset("")
        dataset.agents, dataset.tl_faces, dataset.frames, dataset.scenes = agents, tl_faces, frames, scenes
        return dataset

    def __repr__(self):
        return f"ChunkedDataset({self.path!r})"


def _table(header, row):
    """One header and one row as the default PrettyTable style draws them (what l5kit
    prints): every cell centred, with one space either side."""
    widths = [max(len(h), len(v)) for h, v in zip(header, row)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells):
        return "| " + " | ".join(_centre(c, w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([rule, line(header), rule, line(row), rule])


def _centre(text, width):
    # An odd excess goes to the right of odd-length text, to the left of even-length text.
    excess = width - len(text)
    left = excess // 2 + (excess % 2 if len(text) % 2 == 0 else 0)
    return " " * left + text + " " * (excess - left)

