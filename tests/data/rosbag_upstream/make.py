"""Writes tests/data/rosbag_upstream/: a small trace written with upstream roverd's own
channel writers, and the ROS 1 bags upstream's `roverd rosbag` writes from it.

Run by hand in a venv with roverd[ros] 0.3.5 (RadarML/red-rover `format/`, not on the package
index): `python make.py OUT_DIR`.
"""
import json, os, subprocess, sys
import numpy as np
from roverd.sensors import DynamicSensor

out = sys.argv[1]
trace = os.path.join(out, "trace")
os.makedirs(trace)
open(os.path.join(trace, "config.yaml"), "w").write("{}\n")

BEAMS, COLUMNS, FRAMES, IMU = 16, 512, 6, 70
T0 = 1.7e9
rs = np.random.default_rng(2026)

# An OS1-16-like lidar.json in ouster-sdk's layout (512x10: smaller stagger).
alt = [16.6 - 33.2 * b / (BEAMS - 1) for b in range(BEAMS)]
az = [[3.1, 0.9, -0.9, -3.1][b % 4] + 0.02 * (b // 4) for b in range(BEAMS)]
shift = [[18, 6, -6, -18][b % 4] for b in range(BEAMS)]
lidar_json = {
    "sensor_info": {"prod_line": "OS-1-16", "prod_sn": "992100000016"},
    "config_params": {"lidar_mode": "512x10"},
    "lidar_data_format": {
        "pixels_per_column": BEAMS, "columns_per_frame": COLUMNS,
        "pixel_shift_by_row": shift, "column_window": [0, COLUMNS - 1],
        "udp_profile_lidar": "RNG19_RFL8_SIG16_NIR16", "fps": 10},
    "beam_intrinsics": {
        "beam_altitude_angles": alt, "beam_azimuth_angles": az,
        "beam_to_lidar_transform": [1, 0, 0, 15.806, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
        "lidar_origin_to_beam_origin_mm": 15.806},
    "lidar_intrinsics": {
        "lidar_to_sensor_transform": [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1]},
}

lidar = DynamicSensor(os.path.join(trace, "lidar"), create=True)
json.dump(lidar_json, open(os.path.join(trace, "lidar", "lidar.json"), "w"), indent=2)
frames = []
for f in range(FRAMES):
    c = np.arange(COLUMNS)[None, :]
    b = np.arange(BEAMS)[:, None]
    rng = 2000 + 9000 * (np.sin(c / 37.0 + f * 0.1) + 1) + 150 * b + rs.integers(0, 40, (BEAMS, COLUMNS))
    u = rs.random((BEAMS, COLUMNS))
    rng = np.where(u < 0.08, 0, rng)                                 # no return
    rng = np.where((u >= 0.08) & (u < 0.1), 100 + 300 * u, rng)      # returns under 0.5 m
    frames.append(rng.astype(np.uint16))
# 10 Hz with receive jitter and a dropped frame after the 4th (discretize keeps the gap).
ks = [k if k < 4 else k + 1 for k in range(FRAMES)]
jit = [0.0021, -0.0013, 0.0007, 0.0, -0.0024, 0.0012]
ts = np.array([T0 + 0.1 * k + jit[i] for i, k in enumerate(ks)], dtype=np.float64)
lidar.create("ts", {"format": "raw", "type": "f8", "shape": [], "desc": "Timestamp, in seconds"}).write(ts)
lidar.create("rng", {"format": "lzmaf", "type": "u2", "shape": [BEAMS, COLUMNS], "desc": "Range, in millimeters"}).write(np.stack(frames))

imu = DynamicSensor(os.path.join(trace, "imu"), create=True)
i = np.arange(IMU)
its = T0 - 0.05 + 0.01 * i + ((i * 7919) % 11) * 1e-4
rot = np.stack([0.3 + 0.01 * i, -0.2 - 0.002 * i, 1.1 - 0.005 * i], 1).astype(np.float32)
acc = np.stack([0.1 * np.sin(i), 0.05 + 0 * i, 9.81 + 0.01 * i], 1).astype(np.float32)
avel = np.stack([0.001 * i, -0.002 + 0 * i, 0.03 * np.cos(i)], 1).astype(np.float32)
imu.create("ts", {"format": "raw", "type": "f8", "shape": [], "desc": "Timestamp, in seconds"}).write(its.astype(np.float64))
for name, v in [("rot", rot), ("acc", acc), ("avel", avel)]:
    imu.create(name, {"format": "raw", "type": "f4", "shape": [3], "desc": name}).write(v)

roverd = os.path.join(os.path.dirname(sys.executable), "roverd")
subprocess.run([roverd, "rosbag", trace, "--out", os.path.join(out, "min_range_0.5.bag"), "--min_range", "0.5"], check=True)
subprocess.run([roverd, "rosbag", trace, "--out", os.path.join(out, "no_min_range.bag")], check=True)
