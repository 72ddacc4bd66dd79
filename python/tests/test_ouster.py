"""The native Ouster projection (`roverlog_core::ouster` through `transforms.ouster`) against
upstream's numpy algorithm (`PointCloud(native=False)`), on a real-shaped OS1-128 `lidar.json`
(128 beams x 2048 columns): the same points in the same order within float32 rounding, the
same counts, for every range dtype a sensor gives; and its errors."""
import json
import os
import pickle

import numpy as np
import pytest

import roverlog
from roverlog.redrover import sensors, types
from roverlog.redrover.transforms import ouster

from conftest import depth_frames, os1_128_metadata

F32_EPS = np.finfo(np.float32).eps


def write_json(tmp_path, meta, name="lidar.json"):
    path = os.path.join(tmp_path, name)
    with open(path, "w") as f:
        json.dump(meta, f)
    return path


def assert_same_clouds(got, want):
    """Same counts, and each point within float32 rounding of the reference (the native
    table and numpy both compute in float64 and round once)."""
    assert got.xyz.dtype == want.xyz.dtype == np.float32
    np.testing.assert_array_equal(got.length, want.length)
    assert got.xyz.shape == want.xyz.shape and got.length.dtype == np.int32
    np.testing.assert_allclose(got.xyz, want.xyz, rtol=2 * F32_EPS, atol=1e-7)
    for idx in np.ndindex(*got.length.shape):
        assert not got.xyz[idx][got.length[idx]:].any()


@pytest.mark.parametrize("dtype", ["u2", "u4", "f4", "f8", "i4"])
@pytest.mark.parametrize("min_range", [None, 0.5])
def test_native_points_match_upstreams_numpy_on_an_os1_128(tmp_path, dtype, min_range):
    path = write_json(tmp_path, os1_128_metadata())
    rng = depth_frames(3).astype(dtype).reshape(1, 3, 128, 2048)
    data = types.OSDepth(rng=rng, timestamps=np.arange(3.0)[None], intrinsics=path)
    got = ouster.PointCloud(min_range=min_range)(data)
    want = ouster.PointCloud(min_range=min_range, native=False)(data)
    assert_same_clouds(got, want)
    assert got.length.shape == (1, 3) and 0 < got.length.min() < 128 * 2048
    assert got.timestamps is data.timestamps
    # min_range drops the no-return pixels and the returns under 0.5 m; without it, only
    # the no-return ones.
    kept = (rng[0] != 0).reshape(3, -1).sum(axis=1)
    if min_range is None:
        np.testing.assert_array_equal(got.length[0], kept)
    else:
        assert (got.length[0] < kept).all()


def test_float_ranges_that_are_nan_or_infinite_are_dropped_as_upstream_drops_them(tmp_path):
    path = write_json(tmp_path, os1_128_metadata())
    rng = depth_frames(2, seed=3).astype(np.float32)
    rng[0, 5, ::7] = np.nan
    rng[1, 9, ::5] = np.inf
    rng[1, 10, ::3] = -np.inf
    rng[1, 11, ::11] = -3000.0
    data = types.OSDepth(rng=rng[None], timestamps=np.zeros((1, 2)), intrinsics=path)
    for min_range in (None, 0.5):
        got = ouster.PointCloud(min_range=min_range)(data)
        with np.errstate(invalid="ignore"):  # upstream's inf * 0
            want = ouster.PointCloud(min_range=min_range, native=False)(data)
        assert_same_clouds(got, want)
        assert np.isfinite(got.xyz).all()
        # Every NaN and infinite range dropped; the negative ones kept as upstream keeps them.
        if min_range is None:
            assert got.length[0, 1] == (rng[1] != 0).sum() - (~np.isfinite(rng[1])).sum()


def test_the_table_builds_from_a_path_or_a_dict_and_batches_frames(tmp_path):
    meta = os1_128_metadata()
    path = write_json(tmp_path, meta)
    rng = depth_frames(4, seed=1)
    by_path, by_dict = ouster.XYZLut(path), ouster.XYZLut(meta)
    assert by_path.shape == by_dict.shape == (128, 2048)
    xyz, length = by_path.project(rng, 0.5)
    xyz2, length2 = by_dict.project(rng, 0.5)
    np.testing.assert_array_equal(xyz, xyz2)
    np.testing.assert_array_equal(length, length2)
    assert xyz.shape == (4, length.max(), 3)
    # Frame by frame: the same points as in the batch.
    for f in range(4):
        one, n = by_path.project(rng[f:f + 1], 0.5)
        assert n[0] == length[f]
        np.testing.assert_array_equal(one[0], xyz[f, :length[f]])


def test_the_typed_lidar_sensors_give_their_point_clouds(rover):
    root, truth = rover
    for cls in (sensors.OSLidarDepth, sensors.OSLidar):
        lidar = cls(os.path.join(root, "lidar"), past=1)
        for min_range in (None, 30.0):
            pc = lidar.points(6, min_range=min_range)
            want = ouster.PointCloud(min_range=min_range, native=False)(lidar[6])
            assert type(pc) is types.PointCloud
            assert_same_clouds(pc, want)
        # Sensors (and their transforms) pickle for dataloader workers after use.
        again = pickle.loads(pickle.dumps(lidar))
        assert_same_clouds(again.points(6), ouster.PointCloud(native=False)(lidar[6]))


def test_bad_frames_and_files_are_refused_naming_what_is_wrong(tmp_path):
    meta = os1_128_metadata()
    path = write_json(tmp_path, meta)
    lut = ouster.XYZLut(path)
    with pytest.raises(roverlog.errors.FormatError, match="128 x 1024 pixels for a lidar of 128 beams x 2048 columns"):
        lut.project(np.zeros((1, 128, 1024), np.uint16))
    with pytest.raises(roverlog.errors.FormatError, match="C-contiguous"):
        lut.project(np.zeros((1, 128, 4096), np.uint16)[..., ::2])
    with pytest.raises(roverlog.errors.FormatError, match='dtype "<i2"'):
        lut.project(np.zeros((1, 128, 2048), np.int16))
    data = types.OSDepth(rng=np.zeros((1, 1, 64, 2048), np.uint16), timestamps=np.zeros((1, 1)), intrinsics=path)
    with pytest.raises(roverlog.errors.FormatError, match="64 x 2048 pixels"):
        ouster.PointCloud()(data)
    bad = json.loads(json.dumps(meta))
    bad["lidar_data_format"]["pixels_per_column"] = 0
    with pytest.raises(roverlog.errors.FormatError, match="pixels_per_column.*outside 1..=1024"):
        ouster.XYZLut(bad)
    bad = json.loads(json.dumps(meta))
    bad["beam_intrinsics"]["beam_altitude_angles"] = bad["beam_intrinsics"]["beam_altitude_angles"][:100]
    broken = write_json(tmp_path, bad, "short.json")
    with pytest.raises(roverlog.errors.FormatError, match="short.json.*beam_altitude_angles.*100 entries, expected 128"):
        ouster.XYZLut(broken)
    with pytest.raises(roverlog.errors.FileError):
        ouster.XYZLut(os.path.join(tmp_path, "nope.json"))
