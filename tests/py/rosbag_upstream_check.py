"""Compares a ROS 1 bag written by `roverlog rosbag` with the one upstream's `roverd rosbag`
wrote from the same trace (tests/data/rosbag_upstream/), both read with the `rosbags` package.
For tests/cli/rosbag.rs.

    rosbag_upstream_check.py UPSTREAM.bag OURS.bag

Same topics, message types and latching; per topic the same number of messages, in the same
order, at the same bag times, with the same header stamps and frame ids; `/imu`'s
orientation, acceleration, angular velocity and covariances equal; `/points2`'s fields,
`point_step`, `is_dense`, `is_bigendian`, `height` and every point equal (x, y, z float32, bit
for bit). Two fields are allowed to differ, as docs/ros.md ("`roverlog rosbag`") says: upstream writes `width` 1 and
`row_step` 12 (its points array has a leading axis of 1), ours the number of points and the
whole row. Asserts everything; prints a JSON summary on success.
"""
import json
import sys

import numpy as np
from rosbags.rosbag1 import Reader
from rosbags.typesys import Stores, get_typestore

upstream_path, ours_path = sys.argv[1:3]
store = get_typestore(Stores.ROS1_NOETIC)


def load(path):
    with Reader(path) as r:
        conns = {c.topic: (c.msgtype, c.ext.latching) for c in r.connections}
        msgs = {}
        for c, t, raw in r.messages():
            msgs.setdefault(c.topic, []).append((t, store.deserialize_ros1(raw, c.msgtype)))
    return conns, msgs


def vec(v):
    return [getattr(v, k) for k in "xyzw" if hasattr(v, k)]


up_conns, up = load(upstream_path)
our_conns, ours = load(ours_path)
assert up_conns == our_conns, (up_conns, our_conns)
assert sorted(up) == sorted(ours) == ["/imu", "/points2"], (sorted(up), sorted(ours))

summary = {"points": 0}
for topic in up:
    a, b = up[topic], ours[topic]
    assert len(a) == len(b), (topic, len(a), len(b))
    summary[topic] = len(a)
    for k, ((ta, ma), (tb, mb)) in enumerate(zip(a, b)):
        where = f"{topic} message {k}"
        assert ta == tb, (where, "bag time", ta, tb)
        ha, hb = ma.header, mb.header
        assert (ha.stamp.sec, ha.stamp.nanosec, ha.frame_id) == (
            hb.stamp.sec,
            hb.stamp.nanosec,
            hb.frame_id,
        ), (where, ha, hb)
        if topic == "/imu":
            for f in ("orientation", "linear_acceleration", "angular_velocity"):
                assert vec(getattr(ma, f)) == vec(getattr(mb, f)), (
                    where, f, vec(getattr(ma, f)), vec(getattr(mb, f)))
            for f in ("orientation", "linear_acceleration", "angular_velocity"):
                cov = f + "_covariance"
                assert np.array_equal(getattr(ma, cov), getattr(mb, cov)), (where, cov)
        else:
            fa = [(f.name, f.offset, f.datatype, f.count) for f in ma.fields]
            fb = [(f.name, f.offset, f.datatype, f.count) for f in mb.fields]
            assert fa == fb, (where, fa, fb)
            same = ("height", "point_step", "is_dense", "is_bigendian")
            assert [getattr(ma, s) for s in same] == [getattr(mb, s) for s in same], (
                where, [getattr(ma, s) for s in same], [getattr(mb, s) for s in same])
            pa = np.frombuffer(ma.data.tobytes(), "<u4").reshape(-1, 3)
            pb = np.frombuffer(mb.data.tobytes(), "<u4").reshape(-1, 3)
            assert pa.shape == pb.shape, (where, "points", pa.shape, pb.shape)
            diff = np.flatnonzero(np.any(pa != pb, axis=1))
            assert diff.size == 0, (where, "points differ", diff[:5].tolist(), pa.view("<f4")[diff[:5]].tolist(), pb.view("<f4")[diff[:5]].tolist())
            # The documented difference, checked so that it stays the only one.
            assert (ma.width, ma.row_step) == (1, 12), (where, ma.width, ma.row_step)
            assert (mb.width, mb.row_step) == (len(pb), 12 * len(pb)), (where, mb.width, mb.row_step)
            summary["points"] += len(pb)

print(json.dumps(summary))
