"""Upstream `roverd.transforms.ros`: `rover_to_rosbag(out, imu, lidar, min_range=None)`
writes a sensor's lidar point clouds (`/points2`, `sensor_msgs/PointCloud2`) and IMU
(`/imu`, `sensor_msgs/Imu`) to a ROS 1 bag for SLAM tools, as upstream's does.

Here the bag is written by the `roverlog rosbag` command (docs/ros.md), which does the same
conversion in Rust, far faster than Python's `rosbags`: the `roverlog` binary named by
`ROVERLOG_BIN`, else the one on `PATH`. The sensors are given as upstream's are (the
`sensors.OSLidarDepth` and `sensors.IMU` of one trace); their directories are what is read,
with timestamps corrected as `roverd rosbag` corrects them (`correction="auto"`), whatever
correction the objects were made with. `out` must not exist yet.
"""
import os
import shutil
import subprocess

from ...errors import FileError, FormatError

__all__ = ["rover_to_rosbag"]


def _binary():
    found = os.environ.get("ROVERLOG_BIN") or shutil.which("roverlog")
    if not found:
        raise FileError("rover_to_rosbag runs `roverlog rosbag`: no roverlog binary (set ROVERLOG_BIN or put roverlog on PATH)")
    return found


def rover_to_rosbag(out, imu, lidar, min_range=None):
    """Writes `lidar`'s point clouds and `imu`'s samples to the ROS 1 bag `out`."""
    lidar_dir = os.path.abspath(lidar.path)
    imu_dir = os.path.abspath(imu.path)
    trace = os.path.dirname(lidar_dir)
    if os.path.dirname(imu_dir) != trace:
        raise FormatError(f"{imu_dir} and {lidar_dir}: the IMU and the lidar must be sensors of one trace")
    cmd = [_binary(), "rosbag", trace, "--out", os.fspath(out), "--lidar", os.path.basename(lidar_dir),
           "--imu", os.path.basename(imu_dir)]
    if min_range is not None:
        cmd += ["--min-range", repr(float(min_range))]
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise FormatError(f"{out}: `{' '.join(cmd)}` failed (exit {done.returncode}): {done.stderr.strip()}")
