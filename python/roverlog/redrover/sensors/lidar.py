"""`OSLidarDepth` and `OSLidar`, as upstream `roverd.sensors.lidar`."""
import os
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np

from .. import remote as _where, timestamps, types
from .generic import Sensor


@dataclass
class LidarMetadata:
    """Timestamps and the path of the Ouster intrinsics (`lidar.json`; `""` when missing)."""

    timestamps: np.ndarray
    intrinsics: str


class _Ouster(Sensor):
    def __init__(self, path, correction=None, past=0, future=0):
        if correction == "auto":
            correction = partial(timestamps.discretize, interval=10.0, eps=0.05)
        super().__init__(path, correction=correction, past=past, future=future)
        intrinsics = os.path.join(path, "lidar.json")
        if not (_where.exists(intrinsics) if _where.is_url(intrinsics) else os.path.exists(intrinsics)):
            warnings.warn(f"No 'lidar.json' found in {path}; using '' as a placeholder.")
            intrinsics = ""
        self.metadata = LidarMetadata(timestamps=self._timestamps(), intrinsics=intrinsics)

    def points(self, index, min_range=None):
        """Sample `index` as a `types.PointCloud` (m, sensor frame): its range frames
        projected with `lidar.json` by `transforms.ouster.PointCloud(min_range)` (the native
        table, built once per sensor and `min_range`)."""
        key = None if min_range is None else float(min_range)
        clouds = self.__dict__.setdefault("_clouds", {})
        if key not in clouds:
            from ..transforms.ouster import PointCloud

            clouds[key] = PointCloud(min_range=key)
        sample = types.OSDepth(rng=self._read("rng", index), timestamps=self._ts(index), intrinsics=self.metadata.intrinsics)
        return clouds[key](sample)

    def _read(self, name, index):
        return self.channels[name].read(index - self.past, samples=self.window)[None]

    def _ts(self, index):
        return self.metadata.timestamps[index - self.past:index + self.future + 1][None]


class OSLidarDepth(_Ouster):
    """Ouster lidar range only: `lidar[i]` is a `types.OSDepth` (`rng`, staggered).
    `correction="auto"` is `discretize(interval=10., eps=0.05)`."""

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        return types.OSDepth(rng=self._read("rng", index), timestamps=self._ts(index), intrinsics=self.metadata.intrinsics)

    def stream(self, batch=None):
        """Frames in order, each a `types.OSDepth` of one frame (`batch` is not supported,
        as upstream)."""
        if batch is not None:
            raise NotImplementedError("OSLidarDepth.stream reads one frame at a time (batch=None)")
        for t, rng in zip(self.metadata.timestamps, self.channels["rng"].stream()):
            yield types.OSDepth(rng=rng[None, None], timestamps=t[None, None], intrinsics=self.metadata.intrinsics)


class OSLidar(_Ouster):
    """Ouster lidar range, reflectivity and near-infrared: `lidar[i]` is a `types.OSData`.
    `correction="auto"` is `discretize(interval=10., eps=0.05)`."""

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        return types.OSData(
            rng=self._read("rng", index),
            rfl=self._read("rfl", index),
            nir=self._read("nir", index),
            timestamps=self._ts(index),
            intrinsics=self.metadata.intrinsics,
        )
