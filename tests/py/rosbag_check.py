"""Checks a bag written by `roverlog rosbag` against the trace it came from, reading the bag
with the `rosbags` package (and, for ROS 2 MCAP bags, with `mcap` + `mcap-ros2-support`), and
the expected values computed here with numpy and scipy, independently of roverlog. For
tests/cli/rosbag.rs.

    rosbag_check.py BAG FORMAT(bag|mcap) TRACE FRAMES.u2 MIN_RANGE(m or 'none') TESTS_PY_DIR
        [IMPORTED]

FRAMES.u2 holds the lidar's range frames as the test generated them (little-endian uint16,
frame after frame); the IMU is read from the trace's raw channels, the timestamps from its `ts`
files. Asserts everything; prints a JSON summary (message counts, points) on success.

IMPORTED, when given, is the trace `roverlog import` made of BAG: its `points2` sensor must
hold each frame's projected points (padded past its `points` channel with NaN to the widest
frame, as docs/ros.md says), read here as upstream's reader does (numpy over the raw files).
"""
import json
import math
import os
import sys

import numpy as np
from scipy.spatial.transform import Rotation

bag, fmt, trace, frames_path, min_range_arg, tests_py = sys.argv[1:7]
imported = sys.argv[7] if len(sys.argv) > 7 else None
sys.path.insert(0, tests_py)
from timestamps_ref import discretize, smooth  # noqa: E402  (upstream's models, numpy)

min_range = None if min_range_arg == "none" else float(min_range_arg)

# ----- expected values ------------------------------------------------------------------
meta = json.load(open(os.path.join(trace, "lidar", "lidar.json")))
fmt_ = meta["lidar_data_format"]
H, W = fmt_["pixels_per_column"], fmt_["columns_per_frame"]
alt = np.radians(np.array(meta["beam_intrinsics"]["beam_altitude_angles"]))
az_off = np.radians(np.array(meta["beam_intrinsics"]["beam_azimuth_angles"]))
b2l = np.array(meta["beam_intrinsics"]["beam_to_lidar_transform"], dtype=np.float64).reshape(4, 4)
l2s = np.array(meta["lidar_intrinsics"]["lidar_to_sensor_transform"], dtype=np.float64).reshape(4, 4)


def project(rng):
    """The Ouster user guide's range-to-XYZ, with the transforms as homogeneous matrices."""
    r = rng.astype(np.float64)
    enc = 2 * math.pi * (1 - np.arange(W) / W)  # encoder angle per column
    theta = enc[None, :] - az_off[:, None]  # beam azimuth per pixel
    phi = np.broadcast_to(alt[:, None], (H, W))
    n = math.hypot(b2l[0, 3], b2l[2, 3])
    pts = np.empty((H, W, 4))
    pts[..., 0] = (r - n) * np.cos(theta) * np.cos(phi) + b2l[0, 3] * np.cos(enc)[None, :]
    pts[..., 1] = (r - n) * np.sin(theta) * np.cos(phi) + b2l[0, 3] * np.sin(enc)[None, :]
    pts[..., 2] = (r - n) * np.sin(phi) + b2l[2, 3]
    pts[..., 3] = 1.0
    sensor = (pts.reshape(-1, 4) @ l2s.T)[:, :3] / 1000.0
    sensor[r.reshape(-1) == 0] = 0.0
    sensor = sensor.astype(np.float32)
    if min_range is None:
        keep = np.any(sensor != 0, axis=1)
    else:
        keep = np.linalg.norm(sensor, axis=1) >= np.float32(min_range)
    return sensor[keep]


def read_f8(path):
    return np.fromfile(path, dtype="<f8")


frames = np.fromfile(frames_path, dtype="<u2").reshape(-1, H, W)
lidar_ts = discretize(read_f8(os.path.join(trace, "lidar", "ts")), 10.0, 0.05)
imu_ts = smooth(read_f8(os.path.join(trace, "imu", "ts")), 30.0)
imu = {k: np.fromfile(os.path.join(trace, "imu", k), dtype="<f4").reshape(-1, 3)
       for k in ("rot", "acc", "avel")}
n_imu = min(len(imu_ts), *(len(v) for v in imu.values()))
n_lidar = min(len(lidar_ts), len(frames))
quats = Rotation.from_euler("XYZ", imu["rot"][:n_imu].astype(np.float64)).as_quat()

# A hand check of scipy's convention (intrinsic XYZ = Rx(a) Ry(b) Rz(c)) on the first triple:
a, b, c = imu["rot"][0].astype(np.float64)
qx = np.array([math.sin(a / 2), 0, 0, math.cos(a / 2)])
qy = np.array([0, math.sin(b / 2), 0, math.cos(b / 2)])
qz = np.array([0, 0, math.sin(c / 2), math.cos(c / 2)])


def hamilton(p, q):
    (x1, y1, z1, w1), (x2, y2, z2, w2) = p, q
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                     w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])


by_hand = hamilton(hamilton(qx, qy), qz)
assert np.allclose(by_hand, quats[0], atol=1e-15), (by_hand, quats[0])
rx = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
ry = np.array([[math.cos(b), 0, math.sin(b)], [0, 1, 0], [-math.sin(b), 0, math.cos(b)]])
rz = np.array([[math.cos(c), -math.sin(c), 0], [math.sin(c), math.cos(c), 0], [0, 0, 1]])
assert np.allclose(Rotation.from_quat(by_hand).as_matrix(), rx @ ry @ rz, atol=1e-12)


def stamp(t):
    """Upstream's ts_sec_ns: truncated seconds, truncated nanoseconds."""
    ns = int(np.int64(t * 1e9))
    return int(np.int64(t)), ns % 1_000_000_000, ns


# ----- the bag ---------------------------------------------------------------------------
from rosbags.typesys import Stores, get_typestore  # noqa: E402

if fmt == "bag":
    from rosbags.rosbag1 import Reader
    store = get_typestore(Stores.ROS1_NOETIC)
    path = bag
else:
    from rosbags.rosbag2 import Reader
    store = get_typestore(Stores.LATEST)
    path = bag

msgs = {"/imu": [], "/points2": []}
with Reader(path) as reader:
    conns = {c.topic: c for c in reader.connections}
    assert sorted(conns) == ["/imu", "/points2"], sorted(conns)
    for topic, ty in [("/imu", "sensor_msgs/msg/Imu"), ("/points2", "sensor_msgs/msg/PointCloud2")]:
        c = conns[topic]
        assert c.msgtype == ty, (topic, c.msgtype)
        if fmt == "bag":
            msgdef, md5 = store.generate_msgdef(ty)
            assert c.digest == md5, (topic, c.digest, md5)
            assert c.msgdef.data == msgdef, (topic, c.msgdef.data)
            assert c.ext.latching == 1, c.ext
        else:
            msgdef, _ = store.generate_msgdef(ty, ros_version=2)
            assert c.digest == store.hash_rihs01(ty), (topic, c.digest)
            assert c.msgdef.data == msgdef, (topic, c.msgdef.data)
            assert c.ext.serialization_format == "cdr", c.ext
    last = -1
    for conn, t, raw in reader.messages():
        assert t >= last, "messages in time order"
        last = t
        if fmt == "bag":
            msg = store.deserialize_ros1(raw, conn.msgtype)
            again = store.serialize_ros1(msg, conn.msgtype)
        else:
            msg = store.deserialize_cdr(raw, conn.msgtype)
            again = store.serialize_cdr(msg, conn.msgtype)
        assert bytes(again) == bytes(raw), f"{conn.topic}: bytes are rosbags' serialisation"
        msgs[conn.topic].append((t, msg))

assert len(msgs["/imu"]) == n_imu, (len(msgs["/imu"]), n_imu)
assert len(msgs["/points2"]) == n_lidar, (len(msgs["/points2"]), n_lidar)


def check_stamp(t, msg, want_t):
    sec, nsec, ns = stamp(want_t)
    assert t == ns, (t, ns)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nsec), (msg.header.stamp, sec, nsec)


for i, (t, m) in enumerate(msgs["/imu"]):
    check_stamp(t, m, imu_ts[i])
    assert m.header.frame_id == "imu_link", m.header.frame_id
    q = m.orientation
    assert np.allclose([q.x, q.y, q.z, q.w], quats[i], rtol=0, atol=1e-15), (i, q, quats[i])
    for field, key in [("linear_acceleration", "acc"), ("angular_velocity", "avel")]:
        v = getattr(m, field)
        assert [v.x, v.y, v.z] == imu[key][i].astype(np.float64).tolist(), (i, field, v)
    for cov in ("orientation_covariance", "angular_velocity_covariance",
                "linear_acceleration_covariance"):
        assert np.array_equal(getattr(m, cov), np.zeros(9)), cov

points_total = 0
for j, (t, m) in enumerate(msgs["/points2"]):
    check_stamp(t, m, lidar_ts[j])
    assert m.header.frame_id == "os_sensor", m.header.frame_id
    assert [(f.name, f.offset, f.datatype, f.count) for f in m.fields] == [
        ("x", 0, 7, 1), ("y", 4, 7, 1), ("z", 8, 7, 1)], m.fields
    assert (m.height, m.point_step, m.is_bigendian, m.is_dense) == (1, 12, False, True)
    assert m.row_step == 12 * m.width
    got = np.frombuffer(bytes(m.data), dtype="<f4").reshape(-1, 3)
    assert got.shape[0] == m.width
    want = project(frames[j])
    assert got.shape == want.shape, (j, got.shape, want.shape)
    # float32 rounding of the same f64 value computed in another order: a few ulps.
    assert np.allclose(got, want, rtol=4e-7, atol=1e-6), (j, np.abs(got - want).max())
    points_total += got.shape[0]

summary = {"imu": len(msgs["/imu"]), "points2": len(msgs["/points2"]), "points": points_total}

# ----- the bag imported back by roverlog ---------------------------------------------------
if imported is not None:
    d = os.path.join(imported, "points2")
    smeta = json.load(open(os.path.join(d, "meta.json")))
    assert sorted(smeta) == ["points", "ts", "x", "y", "z"], sorted(smeta)
    widths = [m.width for _, m in msgs["/points2"]]
    widest = max(widths)
    assert len(set(widths)) > 1, "the test needs frames of different widths"
    ros = json.load(open(os.path.join(d, "ros.json")))
    assert ros["padded_to"] == widest and ros["points_channel"] == "points", ros
    n = os.path.getsize(os.path.join(d, "ts")) // 8
    assert n == n_lidar, (n, n_lidar)
    ts = read_f8(os.path.join(d, "ts"))
    counts = np.fromfile(os.path.join(d, "points"), dtype="<u4")
    assert smeta["points"]["type"] == "u4" and smeta["points"]["shape"] == []
    xyz = []
    for k in "xyz":
        assert smeta[k]["type"] == "f4" and smeta[k]["shape"] == [widest], smeta[k]
        xyz.append(np.fromfile(os.path.join(d, k), dtype="<f4").reshape(n, widest))
    xyz = np.stack(xyz, axis=-1)
    imported_total = 0
    for j in range(n):
        sec, nsec, _ = stamp(lidar_ts[j])
        assert abs(ts[j] - (sec + nsec * 1e-9)) < 1e-6, (j, ts[j], sec, nsec)
        want = project(frames[j])
        assert counts[j] == want.shape[0] == widths[j], (j, counts[j], want.shape)
        got = xyz[j, :counts[j]]
        assert np.allclose(got, want, rtol=4e-7, atol=1e-6), (j, np.abs(got - want).max())
        in_bag = np.frombuffer(bytes(msgs["/points2"][j][1].data), dtype="<f4").reshape(-1, 3)
        assert np.array_equal(got, in_bag), j
        assert np.isnan(xyz[j, counts[j]:]).all(), j
        imported_total += int(counts[j])
    summary["imported_points"] = imported_total
    summary["padded_to"] = widest

# ----- the same MCAP with mcap + mcap-ros2-support ----------------------------------------
if fmt == "mcap":
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    name = os.path.basename(os.path.normpath(bag))
    with open(os.path.join(bag, name + ".mcap"), "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        counts = {"/imu": 0, "/points2": 0}
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            assert schema.name == {"/imu": "sensor_msgs/msg/Imu",
                                   "/points2": "sensor_msgs/msg/PointCloud2"}[channel.topic]
            k = counts[channel.topic]
            t, want = msgs[channel.topic][k]
            assert message.log_time == t and message.publish_time == t
            assert decoded.header.frame_id == want.header.frame_id
            assert (decoded.header.stamp.sec, decoded.header.stamp.nanosec) == (
                want.header.stamp.sec, want.header.stamp.nanosec)
            if channel.topic == "/imu":
                assert decoded.orientation.w == want.orientation.w
                assert decoded.linear_acceleration.x == want.linear_acceleration.x
            else:
                assert bytes(decoded.data) == bytes(want.data)
                assert decoded.width == want.width
            counts[channel.topic] += 1
        assert counts == {"/imu": n_imu, "/points2": n_lidar}, counts
        meta_records = [m for m in reader.iter_metadata() if m.name == "rosbag2"]
        assert len(meta_records) == 1 and "serialized_metadata" in meta_records[0].metadata
    summary["mcap_ros2"] = counts

print(json.dumps(summary))
