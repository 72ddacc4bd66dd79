"""Channels as `dask.array`s (issue 36): `roverlog.to_dask` and `channel.to_dask` give every
sample, chunked by samples, equal to the NumPy read, for every channel format, through
roverlog's channels and the redrover ones (a resized image channel too); nothing is read
until compute (a file removed after the array was made fails at compute, naming it); chunks
compute in dask's worker processes too."""
import os

import dask
import numpy as np
import pytest

import roverlog
from roverlog.redrover import channels

from conftest import N


def test_every_format_chunked_by_samples_equals_the_numpy_read(trace):
    root, truth = trace
    t = roverlog.Trace(root)
    seen = set()
    for sname, sensor in t.sensors.items():
        for cname, ch in sensor.channels.items():
            arr = roverlog.to_dask(ch, chunk=5)
            want = ch.read()
            assert arr.shape == want.shape and arr.dtype == want.dtype, (sname, cname)
            assert arr.chunks[0] == (5, 5, 5, 5, 3) and all(len(c) == 1 for c in arr.chunks[1:])
            np.testing.assert_array_equal(arr.compute(), want, err_msg=f"{sname}/{cname}")
            np.testing.assert_array_equal(arr[3:11].compute(), ch.read(3, 8))
            np.testing.assert_array_equal(arr[::4].compute(), want[::4])
            # The upstream-style channel of the same file.
            up = channels.from_config(path=ch.path, **sensor.meta[cname])
            np.testing.assert_array_equal(up.to_dask(chunk=7).compute(), up.read())
            seen.add(ch.format)
    assert seen == {"raw", "lzma", "lzmaf", "npz", "jpg", "mjpg"}
    img = os.path.join(root, "camera", "img")
    small = channels.JPEGBlobChannel(img, "u1", (48, 64, 3), resolution=(32, 24))
    arr = small.to_dask(chunk=10)
    assert arr.shape == (N, 24, 32, 3)
    np.testing.assert_array_equal(arr.compute(), small.read())


def test_nothing_is_read_until_compute_and_errors_name_the_file(trace):
    root, truth = trace
    acc = roverlog.Sensor(os.path.join(root, "imu")).channels["acc"]
    arr = acc.to_dask()  # the default chunk: the whole small channel
    assert arr.chunks[0] == (N,)
    os.rename(acc.path, acc.path + ".gone")
    with pytest.raises(roverlog.FileError, match="acc"):
        arr.compute()
    os.rename(acc.path + ".gone", acc.path)
    with pytest.raises(ValueError, match="at least 1"):
        acc.to_dask(chunk=0)


def test_chunks_compute_in_worker_processes(trace):
    root, truth = trace
    rng = roverlog.Sensor(os.path.join(root, "lidar")).channels["rng"]
    arr = rng.to_dask(chunk=6)
    with dask.config.set(scheduler="processes", num_workers=2):
        got = arr.sum(axis=(1, 2)).compute()
    np.testing.assert_array_equal(got, truth["lidar"]["rng"].sum(axis=(1, 2)))
