"""L5Kit's dataset reading over `roverlog.zarr`: `ChunkedDataset(path).open()` gives
`.scenes`, `.frames`, `.agents`, `.tl_faces` arrays that l5kit code indexes as it indexes
zarr-python's, and l5kit's interval helpers (`l5kit.data.filter`).
"""
import os

from . import zarr
from .errors import FormatError, MissingKeyError


class ChunkedDataset:
    def __init__(self, path):
        self.path = os.fspath(path)
        self.root = None

    def open(self, mode="r", cached=True, cache_size_bytes=int(1e9)):
        if mode != "r":
            raise ValueError(f"roverlog.l5kit is read-only (mode {mode!r})")
        self.root = zarr.open(self.path)
        if not isinstance(self.root, zarr.Group):
            raise FormatError(f"{self.path}: an L5Kit dataset is a zarr group")
        for attr, name in [("scenes", "scenes"), ("frames", "frames"), ("agents", "agents"),
                           ("tl_faces", "traffic_light_faces")]:
            if name not in self.root:
                raise MissingKeyError(f"{self.path}: no {name!r} array (not an L5Kit dataset)")
            # l5kit caches up to cache_size_bytes of chunks when `cached`; we cache decoded
            # chunks, up to that budget per array.
            budget = int(cache_size_bytes) if cached else 0
            setattr(self, attr, zarr.Array(os.path.join(self.path, name), cache_bytes=budget))
        self.cached, self.cache_size_bytes = cached, cache_size_bytes
        return self

    def __reduce__(self):
        opened = self.root is not None
        return (_reopen, (self.path, opened, getattr(self, "cached", True), getattr(self, "cache_size_bytes", int(1e9))))

    def __repr__(self):
        return f"ChunkedDataset({self.path!r})"


def _reopen(path, opened, cached, cache_size_bytes):
    d = ChunkedDataset(path)
    return d.open(cached=cached, cache_size_bytes=cache_size_bytes) if opened else d


def get_frames_slice_from_scenes(scene_a, scene_b=None):
    if scene_b is None:
        scene_b = scene_a
    return slice(scene_a["frame_index_interval"][0], scene_b["frame_index_interval"][1])


def get_agents_slice_from_frames(frame_a, frame_b=None):
    if frame_b is None:
        frame_b = frame_a
    return slice(frame_a["agent_index_interval"][0], frame_b["agent_index_interval"][1])


def get_tl_faces_slice_from_frames(frame_a, frame_b=None):
    if frame_b is None:
        frame_b = frame_a
    return slice(frame_a["traffic_light_faces_index_interval"][0],
                 frame_b["traffic_light_faces_index_interval"][1])
