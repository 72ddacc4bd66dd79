"""Upstream's `roverd.transforms.ros.rover_to_rosbag` on ours (issue 36): it runs `roverlog
rosbag` (ROVERLOG_BIN, set by `cargo test --test python`); the ROS 1 bag, read back with the
`rosbags` library, holds one `/imu` message per IMU sample every channel holds and one `/points2` cloud per lidar
frame, each cloud the points `transforms.ouster.PointCloud(min_range)` gives for the frame,
at the frame's corrected timestamp."""
import os
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

import roverlog
from roverlog.redrover import sensors
from roverlog.redrover.transforms import ouster, ros


def test_rover_to_rosbag_writes_every_imu_sample_and_lidar_cloud(rover, tmp_path):
    assert os.environ.get("ROVERLOG_BIN"), "ROVERLOG_BIN is not set: run these tests through `cargo test --test python`"
    root, truth = rover
    imu = sensors.IMU(os.path.join(root, "imu"), correction="auto")
    lidar = sensors.OSLidarDepth(os.path.join(root, "lidar"), correction="auto")
    out = tmp_path / "scratch" / "lidar.bag"
    ros.rover_to_rosbag(out=str(out), imu=imu, lidar=lidar, min_range=0.5)
    counts, clouds, stamps = {}, [], []
    with AnyReader([Path(out)]) as reader:
        for conn, t, raw in reader.messages():
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
            if conn.topic == "/points2":
                msg = reader.deserialize(raw, conn.msgtype)
                clouds.append(msg.width * msg.height)
                stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
    # The IMU's `avel` lost its last sample (a power cut): the samples every channel holds,
    # as upstream's zip of the three channels gives.
    assert len(truth["imu"]["avel"]) == len(imu) - 1
    assert counts == {"/imu": len(truth["imu"]["avel"]), "/points2": len(lidar)}
    to_points = ouster.PointCloud(min_range=0.5)
    for k in (0, len(lidar) // 2):
        assert clouds[k] == to_points(lidar[k]).xyz.shape[-2], k
        assert stamps[k] == pytest.approx(lidar.metadata.timestamps[k], abs=1e-6)
    with pytest.raises(roverlog.FormatError, match="exists|must not exist"):
        ros.rover_to_rosbag(out=str(out), imu=imu, lidar=lidar)
