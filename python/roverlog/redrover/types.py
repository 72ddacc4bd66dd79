"""The sample types of upstream `roverd.types`: generic dataclasses of arrays registered
with optree (abstract-dataloader's `ext.types.dataclass`), so `optree.tree_map` and
abstract-dataloader's collation see through them.

Every array has a leading batch axis (1 for one sample) and then a time axis (`past + 1 +
future` frames); `range_resolution`/`doppler_resolution` are `(1,)`; `intrinsics` is a path.
"""
from typing import Generic

from abstract_dataloader.ext.types import TArray, dataclass
from jaxtyping import Complex64, Float, Float32, Float64, Int16, Integer, UInt8, UInt16


@dataclass
class XWRRadarIQ(Generic[TArray]):
    """Raw radar I/Q frames (slow time, tx, rx, fast time with interleaved IIQQ)."""

    iq: Int16[TArray, "batch t slow tx rx fast"]
    timestamps: Float64[TArray, "batch t"]
    range_resolution: Float[TArray, "#batch"]
    doppler_resolution: Float[TArray, "#batch"]
    valid: UInt8[TArray, "batch t"]


@dataclass
class XWR4DSpectrum(Generic[TArray]):
    """A 4D radar spectrum (doppler, elevation, azimuth, range)."""

    spectrum: Complex64[TArray, "batch t doppler elevation azimuth range"]
    timestamps: Float64[TArray, "batch t"]
    range_resolution: Float[TArray, "#batch"]
    doppler_resolution: Float[TArray, "#batch"]


@dataclass
class Depth(Generic[TArray]):
    """Range in beam-time space (mm)."""

    rng: UInt16[TArray, "batch t beam time"]
    timestamps: Float64[TArray, "batch t"]


@dataclass
class PointCloud(Generic[TArray]):
    """Points (m), zero-padded to the same count per frame, with each frame's count."""

    xyz: Float32[TArray, "batch t n 3"]
    length: Integer[TArray, "#batch #t"]
    timestamps: Float64[TArray, "batch t"]


@dataclass
class OSDepth(Generic[TArray]):
    """Ouster range (mm), staggered, with the path of the sensor's intrinsics."""

    rng: UInt16[TArray, "batch t beam time"]
    timestamps: Float64[TArray, "batch t"]
    intrinsics: str


@dataclass
class OSData(Generic[TArray]):
    """Ouster range (mm), reflectivity and near-infrared, staggered, with the intrinsics' path."""

    rng: UInt16[TArray, "batch t beam time"]
    rfl: UInt8[TArray, "batch t beam time"]
    nir: UInt16[TArray, "batch t beam time"]
    timestamps: Float64[TArray, "batch t"]
    intrinsics: str


@dataclass
class CameraData(Generic[TArray]):
    """RGB frames, height-width-channel."""

    image: UInt8[TArray, "batch t height width 3"]
    timestamps: Float64[TArray, "batch t"]


@dataclass
class CameraSemseg(Generic[TArray]):
    """Semantic segmentation classes per pixel."""

    semseg: UInt8[TArray, "batch t height width"]
    timestamps: Float64[TArray, "batch t"]


@dataclass
class IMUData(Generic[TArray]):
    """Linear acceleration (m/s^2), orientation (Euler angles), angular velocity."""

    acc: Float32[TArray, "batch t 3"]
    rot: Float32[TArray, "batch t 3"]
    avel: Float32[TArray, "batch t 3"]
    timestamps: Float64[TArray, "batch t"]


@dataclass
class Pose(Generic[TArray]):
    """Position (m, front-left-up), velocity, acceleration, rotation matrix."""

    pos: Float32[TArray, "batch t 3"]
    vel: Float32[TArray, "batch t 3"]
    acc: Float32[TArray, "batch t 3"]
    rot: Float32[TArray, "batch t 3 3"]
    timestamps: Float64[TArray, "batch t"]


__all__ = [
    "XWRRadarIQ", "XWR4DSpectrum", "Depth", "PointCloud", "OSDepth", "OSData", "CameraData",
    "CameraSemseg", "IMUData", "Pose",
]
