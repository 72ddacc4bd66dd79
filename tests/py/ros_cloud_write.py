"""Writes ROS recordings of point clouds whose width changes, for tests/interop/ros_cloud.rs,
and what importing them must give.

usage: ros_cloud_write.py OUTDIR

- OUTDIR/rosbag2/: a rosbag2 directory (MCAP storage) written by rosbags (CDR);
- OUTDIR/ros1.bag: a ROS 1 bag written by rosbags (bz2 chunks);
- OUTDIR/expected.json: per imported topic the sensor name, header stamps, `padded_to` (or
  null) and per channel its type, shape and the values every message must give, the padding
  included (NaN as null); per skipped topic a word of the reason.

The clouds are built with numpy structured arrays, the padding computed here from the
message's own points, independently of roverlog.
"""

import json
import sys
from pathlib import Path

import numpy as np
from mcap_ros2._dynamic import serialize_dynamic
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Ros2Writer
from rosbags.typesys import Stores, get_typestore

T0 = 1_700_000_000
TYPE = "sensor_msgs/msg/PointCloud2"
rng = np.random.default_rng(2828)
store = get_typestore(Stores.ROS2_HUMBLE)
# PointField datatypes.
PF = {"i1": 1, "u1": 2, "i2": 3, "u2": 4, "i4": 5, "u4": 6, "f4": 7, "f8": 8}


def header(i):
    return {"stamp": {"sec": T0 + i, "nanosec": 250_000_000}, "frame_id": "lidar"}


def cloud(i, fields, point_step, width, height=1, big=False):
    """A PointCloud2 of `height` x `width` random points; `fields`: (name, offset, code).
    Returns the message and each field's values in point order."""
    order = ">" if big else "<"
    dt = np.dtype({"names": [f[0] for f in fields],
                   "formats": [order + f[2] for f in fields],
                   "offsets": [f[1] for f in fields], "itemsize": point_step})
    n = width * height
    rec = np.zeros(n, dtype=dt)
    for name, _, code in fields:
        if code.startswith("f"):
            rec[name] = rng.normal(size=n) * 20
        else:
            rec[name] = rng.integers(0, np.iinfo(code).max, size=n)
    raw = bytearray(rec.tobytes())
    # The bytes between and after the fields are not zero: they must not leak into values.
    used = np.zeros(point_step, bool)
    for name, off, code in fields:
        used[off:off + np.dtype(code).itemsize] = True
    for p in range(n):
        for b in np.flatnonzero(~used):
            raw[p * point_step + b] = 0xA5
    msg = {"header": header(i), "height": height, "width": width,
           "fields": [{"name": nm, "offset": off, "datatype": PF[code], "count": 1}
                      for nm, off, code in fields],
           "is_bigendian": big, "point_step": point_step, "row_step": point_step * width,
           "data": bytes(raw), "is_dense": True}
    return msg, {name: rec[name].astype(np.float64) for name, _, _ in fields}


def padded(vals, code, width, max_width):
    """A field's values padded to max_width: NaN (null) for floats, 0 for integers."""
    fill = None if code.startswith("f") else 0.0
    return [float(v) for v in vals] + [fill] * (max_width - width)


topics = {}  # topic -> (messages, expected or None, skip word or None)

def padded_topic(fields, point_step, widths, sensor, count, big=False):
    """Messages of `widths` points and what the import must give: each field padded to the
    widest, and the count channel `count`."""
    msgs, chans = [], {n: [] for n, _, _ in fields}
    for i, w in enumerate(widths):
        m, vals = cloud(i, fields, point_step, w, big=big)
        msgs.append(m)
        for n, _, code in fields:
            chans[n].append(padded(vals[n], code, w, max(widths)))
    channels = {n: {"dtype": code, "shape": [max(widths)], "values": chans[n]}
                for n, _, code in fields}
    channels[count] = {"dtype": "u4", "shape": [], "values": [[w] for w in widths]}
    return (msgs, {"sensor": sensor, "padded_to": max(widths), "count_channel": count,
                   "channels": channels}, None)


# The lidar: x y z intensity f4, ring u2 at 16, 2 bytes of padding; widths 5 9 0 7.
LIDAR = [("x", 0, "f4"), ("y", 4, "f4"), ("z", 8, "f4"), ("intensity", 12, "f4"),
         ("ring", 16, "u2")]
topics["/lidar/points"] = padded_topic(LIDAR, 20, [5, 9, 0, 7], "lidar_points", "points")

# A field named `points`, big-endian data, widths 3 1 4: the count is `n_points`.
FIELDS = [("x", 0, "f8"), ("points", 8, "i2")]
topics["/filtered"] = padded_topic(FIELDS, 12, [3, 1, 4], "filtered", "n_points", big=True)

# A cloud of fixed width maps as before: no padding, no count channel.
msgs, chans = [], {n: [] for n, _, _ in LIDAR}
for i in range(3):
    m, vals = cloud(i, LIDAR, 20, 6)
    msgs.append(m)
    for n, _, _ in LIDAR:
        chans[n].append([float(v) for v in vals[n]])
topics["/fixed"] = (msgs, {
    "sensor": "fixed", "padded_to": None,
    "channels": {n: {"dtype": code, "shape": [6], "values": chans[n]} for n, _, code in LIDAR},
}, None)

# Skipped: the fields change mid-topic (intensity f4 -> u2) ...
OTHER = [("x", 0, "f4"), ("y", 4, "f4"), ("z", 8, "f4"), ("intensity", 12, "u2"),
         ("ring", 16, "u2")]
msgs = [cloud(0, LIDAR, 20, 4)[0], cloud(1, LIDAR, 20, 6)[0], cloud(2, OTHER, 20, 5)[0]]
topics["/fields_change"] = (msgs, None, "point field intensity is u2 instead of f4")
# ... and an organized cloud changes its size.
msgs = [cloud(0, LIDAR, 20, 4, height=2)[0], cloud(1, LIDAR, 20, 4, height=3)[0]]
topics["/organized"] = (msgs, None, "only an unorganized cloud (height 1) may change its width")


def log_ns(i):
    return (T0 + i) * 1_000_000_000 + 250_000_000 + 5_000_000


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    msgdef = store.generate_msgdef(TYPE, ros_version=2)[0]
    encode = serialize_dynamic(TYPE, msgdef)[TYPE]
    objs = {(name, i): store.deserialize_cdr(encode(m), TYPE)
            for name, (msgs, _, _) in topics.items() for i, m in enumerate(msgs)}
    order = sorted(objs, key=lambda k: (k[1], k[0]))

    with Ros2Writer(out / "rosbag2", version=8, storage_plugin=StoragePlugin.MCAP) as w:
        conns = {name: w.add_connection(name, TYPE, typestore=store) for name in topics}
        for name, i in order:
            w.write(conns[name], log_ns(i), store.serialize_cdr(objs[(name, i)], TYPE))

    w = Ros1Writer(out / "ros1.bag")
    w.set_compression(Ros1Writer.CompressionFormat.BZ2)
    with w:
        conns = {name: w.add_connection(name, TYPE, typestore=store) for name in topics}
        for name, i in order:
            w.write(conns[name], log_ns(i), store.serialize_ros1(objs[(name, i)], TYPE))

    expected = {"topics": {}, "skipped": {}}
    for name, (msgs, exp, skip) in topics.items():
        if skip:
            expected["skipped"][name] = {"reason": skip, "messages": len(msgs)}
            continue
        exp["stamps"] = [T0 + i + 0.25 for i in range(len(msgs))]
        expected["topics"][name] = exp
    (out / "expected.json").write_text(json.dumps(expected))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
