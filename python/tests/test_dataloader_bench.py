"""`python/benches/dataloader.py`'s loop, ours only (upstream roverd is not on PyPI), on two
minutes of the red-rover rig (`roverlog bench --only hour-trace --quick`, ROVERLOG_BIN): the
bench's code cannot rot unnoticed. Through forked workers and in-process, every sample is the
lidar frame sampled and the camera frame and IMU sample the generator wrote at its time."""
import os
import subprocess
import sys

import numpy as np

import roverlog

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python", "benches"))

import dataloader  # noqa: E402


def rig_trace(tmp_path):
    binary = os.environ.get("ROVERLOG_BIN")
    assert binary, "ROVERLOG_BIN is not set: run these tests through `cargo test --test python`"
    out = subprocess.run([binary, "bench", "--only", "hour-trace", "--quick", "--dir", str(tmp_path)],
                         check=True, stdout=subprocess.PIPE, text=True, timeout=300).stdout
    path = out.strip().splitlines()[-1]
    assert os.path.isfile(os.path.join(path, "config.yaml")), out
    return path


def test_the_dataloader_loop_reads_each_sample_at_its_time_in_workers_and_in_process(tmp_path):
    path = rig_trace(tmp_path)
    low = roverlog.Trace(path)
    ts = {k: low[k].channels["ts"].read() for k in ("camera", "lidar", "imu")}
    n_lidar = len(ts["lidar"])

    runs = [dataloader.side("ours", path, workers=w, samples=96, batch=8) for w in (2, 0)]
    for r in runs:
        # Every lidar frame has a camera frame and an IMU sample within 0.1 s (the last may
        # fall outside a sensor's span by rounding).
        assert n_lidar - 1 <= r["len"] <= n_lidar, r
        assert r["samples"] == 96 and r["per_s"] > 0 and r["first_s"] > 0, r

    # The same samples read directly: the lidar frame (the reference: sample i is the i-th
    # lidar frame kept), and the IMU sample nearest its time.
    trace = dataloader.open_trace("ours", path)
    ref = trace.indices["lidar"]
    assert len(ref) == runs[0]["len"] and np.all(np.diff(ref.astype(np.int64)) == 1), ref
    idx = dataloader.indices(runs[0]["len"], 96)
    rng = low["lidar"].channels["rng"]
    lidar, imu = 0, 0.0
    for i in idx:
        t = ts["lidar"][ref[i]]
        j = int(np.argmin(np.abs(ts["imu"] - t)))
        lidar += int(rng[int(ref[i])].sum(dtype=np.uint64))
        imu += sum(float(low["imu"].channels[k][j].astype(np.float64).sum()) for k in dataloader.SUBSETS["imu"])
    for r in runs:
        assert r["lidar_sum"] == lidar, (r, lidar)
        assert np.isclose(r["imu_sum"], imu, rtol=1e-12, atol=0), (r, imu)

    # And the camera frame is the one nearest the lidar frame's time.
    video = low["camera"].channels["video.avi"]
    for i in idx[:8]:
        k = int(np.argmin(np.abs(ts["camera"] - ts["lidar"][ref[i]])))
        np.testing.assert_array_equal(trace[i]["camera"]["video.avi"][0], video[k])
