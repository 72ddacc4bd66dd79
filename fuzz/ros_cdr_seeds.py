"""Writes fuzz/fuzz_targets/ros_schemas/*.msg (the ROS 2 and ROS 1 definitions the `ros_cdr`
target decodes against) and seeds in fuzz/corpus-seeds/ros_cdr/: byte 0 picks the schema and the
wire (bit 0: 0 CDR, 1 ROS 1; bits 1-3: 0 = schema text in the input up to a NUL, else the
n-th of TYPES), the rest is one message serialized by rosbags.

usage: .venv/bin/python fuzz/ros_cdr_seeds.py   (from the repository root)
"""

from pathlib import Path

import numpy as np
from rosbags.typesys import Stores, get_typestore

TYPES = ["sensor_msgs/msg/Imu", "sensor_msgs/msg/Image", "sensor_msgs/msg/PointCloud2",
         "sensor_msgs/msg/LaserScan", "sensor_msgs/msg/NavSatFix",
         "sensor_msgs/msg/CompressedImage", "geometry_msgs/msg/PoseStamped"]
store = get_typestore(Stores.ROS2_HUMBLE)
T = store.types
root = Path("fuzz")
for t in TYPES:
    for version, suffix in [(2, ".msg"), (1, ".ros1.msg")]:
        text, _ = store.generate_msgdef(t, ros_version=version)
        (root / "fuzz_targets/ros_schemas" / (t.split("/")[-1] + suffix)).write_text(text)

hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=5, nanosec=7),
                               frame_id="f")
V3 = T["geometry_msgs/msg/Vector3"]
msgs = {
    "sensor_msgs/msg/Imu": T["sensor_msgs/msg/Imu"](
        header=hdr, orientation=T["geometry_msgs/msg/Quaternion"](x=0.1, y=0.2, z=0.3, w=0.9),
        orientation_covariance=np.zeros(9), angular_velocity=V3(x=1, y=2, z=3),
        angular_velocity_covariance=np.zeros(9), linear_acceleration=V3(x=4, y=5, z=6),
        linear_acceleration_covariance=np.zeros(9)),
    "sensor_msgs/msg/Image": T["sensor_msgs/msg/Image"](
        header=hdr, height=2, width=3, encoding="bgr8", is_bigendian=0, step=9,
        data=np.arange(18, dtype=np.uint8)),
    "sensor_msgs/msg/PointCloud2": T["sensor_msgs/msg/PointCloud2"](
        header=hdr, height=1, width=2,
        fields=[T["sensor_msgs/msg/PointField"](name=n, offset=4 * k, datatype=7, count=1)
                for k, n in enumerate("xyz")],
        is_bigendian=False, point_step=12, row_step=24,
        data=np.arange(24, dtype=np.uint8), is_dense=True),
    "sensor_msgs/msg/LaserScan": T["sensor_msgs/msg/LaserScan"](
        header=hdr, angle_min=-1, angle_max=1, angle_increment=0.5, time_increment=0,
        scan_time=0.1, range_min=0, range_max=9, ranges=np.arange(5, dtype=np.float32),
        intensities=np.zeros(0, dtype=np.float32)),
    "sensor_msgs/msg/NavSatFix": T["sensor_msgs/msg/NavSatFix"](
        header=hdr, status=T["sensor_msgs/msg/NavSatStatus"](status=0, service=1),
        latitude=40.0, longitude=-79.0, altitude=200.0, position_covariance=np.zeros(9),
        position_covariance_type=0),
    "sensor_msgs/msg/CompressedImage": T["sensor_msgs/msg/CompressedImage"](
        header=hdr, format="jpeg", data=np.frombuffer(b"\xff\xd8\xff\xd9", dtype=np.uint8)),
    "geometry_msgs/msg/PoseStamped": T["geometry_msgs/msg/PoseStamped"](
        header=hdr, pose=T["geometry_msgs/msg/Pose"](
            position=T["geometry_msgs/msg/Point"](x=1, y=2, z=3),
            orientation=T["geometry_msgs/msg/Quaternion"](x=0, y=0, z=0, w=1))),
}
out = root / "corpus-seeds/ros_cdr"
for k, t in enumerate(TYPES, start=1):
    name = t.split("/")[-1]
    cdr = bytes(store.serialize_cdr(msgs[t], t))
    ros1 = bytes(store.serialize_ros1(msgs[t], t))
    (out / f"{name}-cdr").write_bytes(bytes([k << 1]) + cdr)
    (out / f"{name}-ros1").write_bytes(bytes([(k << 1) | 1]) + ros1)
# Schema text in the input: alignment after a string and a byte sequence, a nested type.
text = b"int32 a\nstring s\nuint8[] d\nfuzz/N n\n===\nMSG: fuzz/N\nfloat64 x\n"
msg = bytes([0, 1, 0, 0]) + (7).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"hi\0"
msg += b"\0" + (2).to_bytes(4, "little") + b"ab" + bytes(6) + np.float64(2.5).tobytes()
(out / "inline-schema-cdr").write_bytes(bytes([0]) + text + b"\0" + msg)
# wstring (rosbags cannot write one): both wire forms, little- and big-endian, a surrogate pair,
# and a float64 after the string so the padding after it matters.
W_TEXT = b"uint32 a\nwstring w\nfloat64 x\nwstring<=8 b\nwstring[] l\n"


def wstring_seed(word, size, big):
    order = "big" if big else "little"
    units = np.frombuffer(word.encode("utf-16-le"), dtype="<u2").tolist()
    body = (7).to_bytes(4, order) + len(units).to_bytes(4, order)
    body += b"".join(u.to_bytes(size, order) for u in units)
    body += bytes(-len(body) % 8) + np.array([2.5], dtype=">f8" if big else "<f8").tobytes()
    body += (1).to_bytes(4, order) + (0x41).to_bytes(size, order)  # b = "A"
    body += bytes(-len(body) % 4) + (0).to_bytes(4, order)  # l = []
    head = bytes([0, 0 if big else 1, 0, 0])
    return bytes([0]) + W_TEXT + b"\0" + head + body


(out / "wstring-4byte-le").write_bytes(wstring_seed("wé\U0001d11e", 4, False))
(out / "wstring-2byte-be").write_bytes(wstring_seed("wé\U0001d11e", 2, True))
