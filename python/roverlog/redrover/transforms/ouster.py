"""Ouster lidar transforms, as upstream `roverd.transforms.ouster` (import it explicitly):
`Destagger` (`types.OSDepth` -> `types.Depth`) and `PointCloud` (`types.OSDepth` ->
`types.PointCloud`), from the sensor's `lidar.json` (the Ouster SDK's sensor metadata), in
numpy, without the Ouster SDK.

- Destaggering: row `h` of a frame is rotated right by `pixel_shift_by_row[h]` columns,
  so every beam's column `w` looks along the same azimuth.
- Points: the Ouster Software User Guide's "lidar range data to Cartesian coordinates".
  For beam `h` and column `w` of a frame `W` columns wide, with the encoder angle
  `enc = 2 pi (1 - w / W)`, the beam's azimuth offset `az` and altitude `alt` (degrees in
  `beam_intrinsics`), and the beam origin's offsets `bx = beam_to_lidar[0, 3]`,
  `bz = beam_to_lidar[2, 3]` (mm): with `r' = r - hypot(bx, bz)`,
  `x = r' cos(alt) cos(enc - az) + bx cos(enc)`, `y = r' cos(alt) sin(enc - az) + bx sin(enc)`,
  `z = r' sin(alt) + bz`; in metres, then through `lidar_to_sensor_transform` (its
  translation in mm). A range of 0 is no return: the point is 0. The points kept are those
  not 0 (or at least `min_range` m away) and not NaN, per frame, zero-padded to the largest
  count, with each frame's count in `length`.

Ranges are read from the staggered frames as stored (points need no destaggering).

`PointCloud` projects in the native library (`roverlog_core::ouster`): the table of one
direction and one offset per pixel is built once per `lidar.json`, and a frame costs one
multiply-add per coordinate, without the GIL; `uint16`, `uint32`, `float32` and `float64`
ranges go as they are, other dtypes as float64. `PointCloud(native=False)` is upstream's
algorithm in numpy (the reference it is tested and benchmarked against); both give the same
points within float32 rounding.
"""
import json
import os
from dataclasses import dataclass

import numpy as np
from abstract_dataloader import spec

from ... import _roverlog
from ...errors import FormatError
from .. import remote as _where, types

# Range dtypes the native projection takes as they are (others are converted to float64).
_NATIVE_DTYPES = (np.dtype("<u2"), np.dtype("<u4"), np.dtype("<f4"), np.dtype("<f8"))


@dataclass
class LidarIntrinsics:
    """What `lidar.json` says that destaggering and points need."""

    pixels_per_column: int
    columns_per_frame: int
    pixel_shift_by_row: np.ndarray
    beam_altitude_angles: np.ndarray
    beam_azimuth_angles: np.ndarray
    beam_to_lidar_transform: np.ndarray
    lidar_to_sensor_transform: np.ndarray

    @classmethod
    def from_json(cls, cfg):
        """From the text of a `lidar.json` (the SDK's `SensorInfo.to_json_string`)."""
        meta = json.loads(cfg)
        fmt, beam, lidar = meta["lidar_data_format"], meta["beam_intrinsics"], meta["lidar_intrinsics"]
        return cls(
            pixels_per_column=fmt["pixels_per_column"],
            columns_per_frame=fmt["columns_per_frame"],
            pixel_shift_by_row=np.asarray(fmt["pixel_shift_by_row"], dtype=np.int64),
            beam_altitude_angles=np.asarray(beam["beam_altitude_angles"], dtype=np.float64),
            beam_azimuth_angles=np.asarray(beam["beam_azimuth_angles"], dtype=np.float64),
            beam_to_lidar_transform=np.asarray(beam["beam_to_lidar_transform"], dtype=np.float64).reshape(4, 4),
            lidar_to_sensor_transform=np.asarray(lidar["lidar_to_sensor_transform"], dtype=np.float64).reshape(4, 4),
        )


def _read_text(path):
    """The text of `lidar.json` at `path` (a file, or `s3://` read in place)."""
    if _where.is_url(path):
        data = _where.read_file(path)
        if data is None:
            raise FileNotFoundError(path)
        return data.decode()
    with open(path) as f:
        return f.read()


class ConfigCache:
    """`lidar.json` files parsed once per path (and once per distinct content)."""

    def __init__(self):
        self._by_path = {}
        self._by_text = {}

    def text(self, info):
        """The `lidar.json` text `info` was parsed from."""
        return next(text for text, parsed in self._by_text.items() if parsed is info)

    def __getitem__(self, path):
        found = self._by_path.get(path)
        if found is None:
            try:
                text = _read_text(path)
            except FileNotFoundError:
                raise FormatError(f"Lidar sensor intrinsics {path} does not exist.") from None
            if text not in self._by_text:
                try:
                    self._by_text[text] = LidarIntrinsics.from_json(text)
                except (KeyError, TypeError, ValueError) as e:
                    raise FormatError(f"{path}: not Ouster sensor metadata ({type(e).__name__}: {e})") from None
            found = self._by_path[path] = self._by_text[text]
        return found


class Destagger(spec.Transform):
    """`types.OSDepth` -> `types.Depth`, each row rotated by its `pixel_shift_by_row`."""

    def __init__(self, config=None):
        self._config = ConfigCache() if config is None else config

    def __call__(self, data):
        shifts = self._config[data.intrinsics].pixel_shift_by_row
        width = data.rng.shape[-1]
        source = (np.arange(width)[None, :] - shifts[:, None]) % width  # column read, per row
        return types.Depth(rng=np.take_along_axis(data.rng, source[None, None], axis=-1), timestamps=data.timestamps)


class _Directions:
    """Per beam and column: the unit direction and the beam origin (see the module)."""

    def __init__(self, info):
        bx, bz = float(info.beam_to_lidar_transform[0, 3]), float(info.beam_to_lidar_transform[2, 3])
        width = info.columns_per_frame
        enc = 2 * np.pi * (1.0 - np.arange(width) / width)
        az = enc[None, :] - np.deg2rad(info.beam_azimuth_angles)[:, None]
        alt = np.deg2rad(info.beam_altitude_angles)[:, None]
        self.unit = np.stack(
            [np.cos(alt) * np.cos(az), np.cos(alt) * np.sin(az), np.broadcast_to(np.sin(alt), az.shape)], axis=-1
        )
        self.origin = np.stack(
            [bx * np.cos(enc)[None, :], bx * np.sin(enc)[None, :], np.full((1, width), bz)], axis=-1
        )
        self.offset = float(np.hypot(bx, bz))
        self.rotation = info.lidar_to_sensor_transform[:3, :3]
        self.translation = info.lidar_to_sensor_transform[:3, 3] * 1e-3

    def points(self, rng):
        """`(..., beam, column)` ranges (mm) -> `(..., beam, column, 3)` metres, 0 for no return."""
        r = rng.astype(np.float64, copy=False)
        lidar = ((r - self.offset)[..., None] * self.unit + self.origin) * 1e-3
        sensor = lidar @ self.rotation.T + self.translation
        sensor[r == 0] = 0.0
        return sensor


def XYZLut(source):
    """The native per-pixel table of a `lidar.json`, from its path or its parsed dict: its
    `project(rng, min_range=None)` takes a C-contiguous `(frames, beams, columns)` array of
    `uint16`, `uint32`, `float32` or `float64` ranges (mm) and returns `(xyz, length)`,
    float32 `(frames, n, 3)` points (m) zero-padded to the largest count `n` and int32
    `(frames,)` counts, without the GIL; `shape` is `(beams, columns)`."""
    if isinstance(source, dict):
        return _roverlog.OusterLut.from_json(json.dumps(source), "lidar.json (a dict)")
    if _where.is_url(source):
        return _roverlog.OusterLut.from_json(_read_text(source), source)
    return _roverlog.OusterLut(os.fspath(source))


class PointCloud(spec.Transform):
    """`types.OSDepth` -> `types.PointCloud` (see the module); `min_range` in metres.
    `native=False`: upstream's numpy algorithm instead of the native table."""

    def __init__(self, min_range=None, *, native=True):
        self.cache = ConfigCache()
        self.lut_cache = {}
        self.min_range = min_range
        self.native = native

    def __getstate__(self):
        # The native tables do not pickle; a worker builds its own on first use.
        return {**self.__dict__, "lut_cache": {}}

    def __call__(self, data):
        batch = data.rng.shape[:2]
        info = self.cache[data.intrinsics]
        lut = self.lut_cache.get(id(info))
        if lut is None:
            if self.native:
                lut = _roverlog.OusterLut.from_json(self.cache.text(info), str(data.intrinsics))
            else:
                lut = _Directions(info)
            self.lut_cache[id(info)] = lut
        rng = data.rng.reshape(-1, *data.rng.shape[-2:])
        if self.native:
            if rng.dtype not in _NATIVE_DTYPES:
                rng = rng.astype(np.float64)
            min_range = None if self.min_range is None else float(self.min_range)
            xyz, length = lut.project(np.ascontiguousarray(rng), min_range)
            return types.PointCloud(xyz=xyz.reshape(*batch, -1, 3), length=length.reshape(batch), timestamps=data.timestamps)
        frames = lut.points(rng).astype(np.float32)
        kept = []
        for pc in frames:
            if self.min_range is None:
                keep = np.any(pc != 0, axis=-1)
            else:
                keep = np.linalg.norm(pc, axis=-1) >= self.min_range
            keep &= ~np.any(np.isnan(pc), axis=-1)
            kept.append(pc[keep])
        length = np.array([len(k) for k in kept], dtype=np.int32)
        padded = np.zeros((len(kept), max(length, default=0), 3), dtype=np.float32)
        for i, k in enumerate(kept):
            padded[i, :len(k)] = k
        return types.PointCloud(xyz=padded.reshape(*batch, -1, 3), length=length.reshape(batch), timestamps=data.timestamps)


__all__ = ["LidarIntrinsics", "ConfigCache", "Destagger", "PointCloud", "XYZLut"]
