"""Writes ROS recordings for tests/interop/ros_import.rs, and what importing them must give.

usage: ros_bags_write.py OUTDIR

- OUTDIR/ros2.mcap: mcap-ros2-support's writer (zstd chunks, ros2msg schemas, CDR);
- OUTDIR/ros2_small_chunks.mcap: the same in chunks of about 512 bytes;
- OUTDIR/rosbag2/: a rosbag2 directory (MCAP storage) written by rosbags, messages serialized
  by rosbags' own CDR serializer;
- OUTDIR/rosbag2_sqlite/: the same with sqlite3 storage (`.db3`, message definitions stored);
- OUTDIR/rosbag2_sqlite_humble/: that database without its message_definitions table, as
  rosbag2 before Iron writes it;
- OUTDIR/rosbag2_{mcap,sqlite}_zstd_{file,message}/: the same messages, rosbag2 compression
  (zstd) of whole files (`.mcap.zstd`, `.db3.zstd`) or of every message, by rosbags; the
  sqlite3 FILE one's metadata.yaml says `FILE` in capitals, as rosbag2 itself writes it;
- OUTDIR/rosbag2_sqlite_zstd_message_cut/: that MESSAGE bag (sqlite3) with the first /imu
  message's zstd frame cut in half;
- OUTDIR/ros1.bag: a ROS 1 bag written by rosbags (bz2 chunks, ROS 1 serialization of the
  ROS 2 types, as upstream's `rosbag` verb writes);
- OUTDIR/ros1.mcap: ROS 1 messages in an MCAP file (`ros1`/`ros1msg`), lz4 chunks, written
  with the `mcap` package's writer;
- OUTDIR/ros1_noetic.bag: the same with ROS 1 noetic's definitions (Header with `seq`), lz4;
- OUTDIR/expected.json: per topic the sensor name, header stamps, log times, and per channel
  the values every message must give (Euler angles from scipy, independently of our code),
  plus the topics that must be skipped with a word of the reason.
"""

import base64
import json
import shutil
import sqlite3
import sys
from pathlib import Path

import cv2
import numpy as np
from mcap_ros2._dynamic import serialize_dynamic
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter
from mcap_ros2.writer import Writer as McapRos2Writer
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.rosbag2 import Writer as Ros2Writer
from rosbags.typesys import Stores, get_typestore
from scipy.spatial.transform import Rotation

N = 5
T0 = 1_700_000_000
rng = np.random.default_rng(28)
store = get_typestore(Stores.ROS2_HUMBLE)


def stamp(i):
    sec, nsec = T0 + i // 10, (i % 10) * 100_000_000 + 123
    return sec, nsec


def header(i, frame="base"):
    sec, nsec = stamp(i)
    return {"stamp": {"sec": sec, "nanosec": nsec}, "frame_id": frame}


def log_ns(i):
    # Received 7 ms after the stamp, so --stamp log differs from the header.
    sec, nsec = stamp(i)
    return sec * 1_000_000_000 + nsec + 7_000_000


topics = {}  # topic -> (type, [messages], expected or None, skip reason word or None)


def f4(v):
    return np.asarray(v, dtype=np.float32).astype(np.float64).ravel().tolist()


# sensor_msgs/Imu
msgs, rot, acc, avel, quat = [], [], [], [], []
for i in range(N):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    a, w = rng.normal(size=3), rng.normal(size=3)
    msgs.append({
        "header": header(i, "imu_link"),
        "orientation": dict(zip("xyzw", q.tolist())),
        "orientation_covariance": [0.0] * 9,
        "angular_velocity": dict(zip("xyz", w.tolist())),
        "angular_velocity_covariance": [0.0] * 9,
        "linear_acceleration": dict(zip("xyz", a.tolist())),
        "linear_acceleration_covariance": [0.0] * 9,
    })
    rot.append(f4(Rotation.from_quat(q).as_euler("XYZ")))
    acc.append(f4(a))
    avel.append(f4(w))
    quat.append(q.tolist())
topics["/imu"] = ("sensor_msgs/msg/Imu", msgs, {
    "sensor": "imu",
    "channels": {
        "rot": {"dtype": "f4", "shape": [3], "values": rot},
        "acc": {"dtype": "f4", "shape": [3], "values": acc},
        "avel": {"dtype": "f4", "shape": [3], "values": avel},
        "quat": {"dtype": "f8", "shape": [4], "values": quat},
    },
}, None)

# sensor_msgs/CompressedImage (a real JPEG, 16x24)
msgs, jpegs = [], []
for i in range(N):
    img = rng.integers(0, 255, size=(16, 24, 3), dtype=np.uint8)
    ok, enc = cv2.imencode(".jpg", img)
    assert ok
    jpegs.append(enc.tobytes())
    msgs.append({"header": header(i, "cam"), "format": "rgb8; jpeg compressed bgr8",
                 "data": enc.tobytes()})
topics["/camera/compressed"] = ("sensor_msgs/msg/CompressedImage", msgs, {
    "sensor": "camera_compressed",
    "blob": {"channel": "img", "shape": [16, 24, 3],
             "files": [base64.b64encode(j).decode() for j in jpegs]},
}, None)
# The same with `format` left empty: the bytes are a JPEG.
topics["/camera/noformat"] = ("sensor_msgs/msg/CompressedImage",
                              [dict(m, format="") for m in msgs], {
    "sensor": "camera_noformat",
    "blob": {"channel": "img", "shape": [16, 24, 3],
             "files": [base64.b64encode(j).decode() for j in jpegs]},
}, None)


def image_topic(name, encoding, h, w, dtype, chans, pad, big=False):
    msgs, want = [], []
    for i in range(N):
        shape = (h, w, chans) if chans > 1 else (h, w)
        px = rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=dtype)
        raw = px.astype(np.dtype(dtype).newbyteorder(">" if big else "<")).tobytes()
        row = w * chans * np.dtype(dtype).itemsize
        data = b"".join(raw[r * row:(r + 1) * row] + b"\xee" * pad for r in range(h))
        msgs.append({"header": header(i, "cam"), "height": h, "width": w, "encoding": encoding,
                     "is_bigendian": int(big), "step": row + pad, "data": data})
        rgb = px[..., ::-1] if encoding.startswith("bgr") else px
        want.append(rgb.astype(np.float64).ravel().tolist())
    shape = [h, w, chans] if chans > 1 else [h, w]
    code = "u1" if np.dtype(dtype).itemsize == 1 else "u2"
    topics[name] = ("sensor_msgs/msg/Image", msgs, {
        "sensor": name.strip("/").replace("/", "_"),
        "channels": {"img": {"dtype": code, "shape": shape, "values": want}},
    }, None)


image_topic("/camera/rgb", "rgb8", 4, 6, np.uint8, 3, pad=2)
image_topic("/camera/bgr", "bgr8", 3, 5, np.uint8, 3, pad=0)
image_topic("/camera/mono", "mono8", 3, 4, np.uint8, 1, pad=1)
image_topic("/depth", "mono16", 5, 3, np.uint16, 1, pad=2)
image_topic("/depth_be", "mono16", 2, 3, np.uint16, 1, pad=0, big=True)

# sensor_msgs/NavSatFix
msgs = []
vals = {k: [] for k in ["latitude", "longitude", "altitude", "status", "service",
                        "position_covariance", "position_covariance_type"]}
for i in range(N):
    lat, lon, alt = 40.44 + i * 1e-5, -79.94 - i * 1e-5, 250.0 + i
    cov = rng.random(9).tolist()
    msgs.append({"header": header(i, "gps"), "status": {"status": i % 3 - 1, "service": 1 + i},
                 "latitude": lat, "longitude": lon, "altitude": alt,
                 "position_covariance": cov, "position_covariance_type": 2})
    for k, v in [("latitude", [lat]), ("longitude", [lon]), ("altitude", [alt]),
                 ("status", [i % 3 - 1]), ("service", [1 + i]), ("position_covariance", cov),
                 ("position_covariance_type", [2])]:
        vals[k].append(v)
types = {"latitude": "f8", "longitude": "f8", "altitude": "f8", "status": "i1",
         "service": "u2", "position_covariance": "f8", "position_covariance_type": "u1"}
shapes = {"position_covariance": [9]}
topics["/gps/fix"] = ("sensor_msgs/msg/NavSatFix", msgs, {
    "sensor": "gps_fix",
    "channels": {k: {"dtype": types[k], "shape": shapes.get(k, []), "values": v}
                 for k, v in vals.items()},
}, None)

# sensor_msgs/PointCloud2: x y z float32, intensity uint16 at 12, 2 bytes of padding.
W = 7
fields = [{"name": n, "offset": 4 * k, "datatype": 7, "count": 1} for k, n in enumerate("xyz")]
fields.append({"name": "intensity", "offset": 12, "datatype": 4, "count": 1})
msgs, pts = [], {"x": [], "y": [], "z": [], "intensity": []}
for i in range(N):
    xyz = rng.normal(size=(W, 3)).astype(np.float32)
    inten = rng.integers(0, 65535, size=W, dtype=np.uint16)
    rec = np.zeros(W, dtype=[("xyz", "<f4", 3), ("i", "<u2"), ("pad", "u1", 2)])
    rec["xyz"], rec["i"] = xyz, inten
    msgs.append({"header": header(i, "os_sensor"), "height": 1, "width": W, "fields": fields,
                 "is_bigendian": False, "point_step": 16, "row_step": 16 * W,
                 "data": rec.tobytes(), "is_dense": True})
    for k, n in enumerate("xyz"):
        pts[n].append(xyz[:, k].astype(np.float64).tolist())
    pts["intensity"].append(inten.astype(np.float64).tolist())
topics["/points"] = ("sensor_msgs/msg/PointCloud2", msgs, {
    "sensor": "points",
    "channels": {n: {"dtype": "u2" if n == "intensity" else "f4", "shape": [W], "values": v}
                 for n, v in pts.items()},
}, None)

# sensor_msgs/LaserScan
msgs, ranges, intens = [], [], []
for i in range(N):
    r, it = rng.random(10) * 30, rng.random(10) * 100
    msgs.append({"header": header(i, "laser"), "angle_min": -1.5, "angle_max": 1.5,
                 "angle_increment": 0.3, "time_increment": 0.001, "scan_time": 0.1,
                 "range_min": 0.1, "range_max": 30.0, "ranges": r.tolist(),
                 "intensities": it.tolist()})
    ranges.append(f4(r))
    intens.append(f4(it))
topics["/scan"] = ("sensor_msgs/msg/LaserScan", msgs, {
    "sensor": "scan",
    "channels": {"ranges": {"dtype": "f4", "shape": [10], "values": ranges},
                 "intensities": {"dtype": "f4", "shape": [10], "values": intens},
                 "angle_increment": {"dtype": "f4", "shape": [], "values": [f4([0.3])] * N},
                 "range_max": {"dtype": "f4", "shape": [], "values": [[30.0]] * N}},
}, None)

# Anything else: numeric fields by path (geometry_msgs/PoseStamped).
msgs, px = [], []
for i in range(N):
    p = rng.normal(size=3)
    msgs.append({"header": header(i, "map"), "pose": {
        "position": dict(zip("xyz", p.tolist())),
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}})
    px.append([p[0]])
topics["/pose"] = ("geometry_msgs/msg/PoseStamped", msgs, {
    "sensor": "pose",
    "channels": {"pose.position.x": {"dtype": "f8", "shape": [], "values": px}},
}, None)

# A publisher that never fills its header: stamps zero, so the log time is the time.
msgs = [{"header": {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""},
         "angle_min": 0.0, "angle_max": 1.0, "angle_increment": 0.5, "time_increment": 0.0,
         "scan_time": 0.0, "range_min": 0.0, "range_max": 5.0, "ranges": [float(i)] * 3,
         "intensities": []} for i in range(N)]
topics["/unstamped"] = ("sensor_msgs/msg/LaserScan", msgs, {
    "sensor": "unstamped", "unstamped": True,
    "channels": {"ranges": {"dtype": "f4", "shape": [3], "values": [[float(i)] * 3
                                                                    for i in range(N)]}},
}, None)

# Topics that must be reported and skipped.
msgs = []
for i in range(N):
    w = 4 if i < 3 else 5
    msgs.append({"header": header(i), "height": 2, "width": w, "encoding": "mono8",
                 "is_bigendian": 0, "step": w, "data": bytes(2 * w)})
topics["/changes_shape"] = ("sensor_msgs/msg/Image", msgs, None, "changes shape")
topics["/chatter"] = ("std_msgs/msg/String", [{"data": f"hello {i}"} for i in range(N)], None,
                      "no numeric fields")
msgs = [{"header": header(i), "format": "png", "data": b"\x89PNG"} for i in range(N)]
topics["/camera/png"] = ("sensor_msgs/msg/CompressedImage", msgs, None, "only JPEG")


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    msgdefs = {t: store.generate_msgdef(t, ros_version=2)[0] for t, _, _, _ in topics.values()}
    encoders = {t: serialize_dynamic(t, d)[t] for t, d in msgdefs.items()}

    # Interleave topics by message index, as a recorder would.
    order = [(i, name) for i in range(N) for name in topics]

    with open(out / "ros2.mcap", "wb") as f:
        w = McapRos2Writer(f)
        schemas = {t: w.register_msgdef(t, d) for t, d in msgdefs.items()}
        for i, name in order:
            t, msgs, _, _ = topics[name]
            w.write_message(name, schemas[t], msgs[i], log_time=log_ns(i), publish_time=log_ns(i))
        w.finish()

    # The same with small chunks (many per topic), for the reading order's test.
    with open(out / "ros2_small_chunks.mcap", "wb") as f:
        w = McapRos2Writer(f, chunk_size=512)
        schemas = {t: w.register_msgdef(t, d) for t, d in msgdefs.items()}
        for i, name in order:
            t, msgs, _, _ = topics[name]
            w.write_message(name, schemas[t], msgs[i], log_time=log_ns(i), publish_time=log_ns(i))
        w.finish()

    cdr = {(name, i): encoders[t](m) for name, (t, msgs, _, _) in topics.items()
           for i, m in enumerate(msgs)}
    objs = {k: store.deserialize_cdr(v, topics[k[0]][0]) for k, v in cdr.items()}

    def rosbag2(path, storage, compression=None):
        w = Ros2Writer(path, version=8, storage_plugin=storage)
        if compression is not None:
            w.set_compression(compression, CompressionFormat.ZSTD)
        with w:
            conns = {name: w.add_connection(name, t, typestore=store)
                     for name, (t, _, _, _) in topics.items()}
            for i, name in order:
                t = topics[name][0]
                w.write(conns[name], log_ns(i), store.serialize_cdr(objs[(name, i)], t))

    rosbag2(out / "rosbag2", StoragePlugin.MCAP)
    rosbag2(out / "rosbag2_sqlite", StoragePlugin.SQLITE3)
    for storage, sname in [(StoragePlugin.MCAP, "mcap"), (StoragePlugin.SQLITE3, "sqlite")]:
        for mode, mname in [(CompressionMode.FILE, "file"), (CompressionMode.MESSAGE, "message")]:
            rosbag2(out / f"rosbag2_{sname}_zstd_{mname}", storage, mode)
    files = sorted(p.name for p in (out / "rosbag2_sqlite_zstd_file").iterdir())
    assert files == ["metadata.yaml", "rosbag2_sqlite_zstd_file.db3.zstd"], files
    meta = out / "rosbag2_sqlite_zstd_file" / "metadata.yaml"
    text = meta.read_text()
    assert "compression_mode: file" in text, text
    meta.write_text(text.replace("compression_mode: file", "compression_mode: FILE"))

    cut = out / "rosbag2_sqlite_zstd_message_cut"
    shutil.copytree(out / "rosbag2_sqlite_zstd_message", cut)
    for db in cut.glob("*.db3"):
        with sqlite3.connect(db) as c:
            (row, data), = c.execute(
                "SELECT m.id, m.data FROM messages m JOIN topics t ON m.topic_id = t.id "
                "WHERE t.name = '/imu' ORDER BY m.id LIMIT 1")
            c.execute("UPDATE messages SET data = ? WHERE id = ?", (data[:len(data) // 2], row))

    # A sqlite3 recording from before Iron (Humble's rosbag2): the same database without
    # its message_definitions table, which rosbag2 added in Iron.
    humble = out / "rosbag2_sqlite_humble"
    shutil.copytree(out / "rosbag2_sqlite", humble)
    for db in humble.glob("*.db3"):
        with sqlite3.connect(db) as c:
            c.execute("DROP TABLE message_definitions")

    w = Ros1Writer(out / "ros1.bag")
    w.set_compression(Ros1Writer.CompressionFormat.BZ2)
    with w:
        conns = {name: w.add_connection(name, t, typestore=store)
                 for name, (t, _, _, _) in topics.items()}
        for i, name in order:
            t = topics[name][0]
            w.write(conns[name], log_ns(i), store.serialize_ros1(objs[(name, i)], t))

    # ROS 1 messages in an MCAP file (Foxglove's ros1 encoding), lz4 chunks.
    with open(out / "ros1.mcap", "wb") as f:
        w = McapWriter(f, compression=CompressionType.LZ4)
        w.start()
        chans = {}
        for name, (t, _, _, _) in topics.items():
            text, _ = store.generate_msgdef(t, ros_version=1)
            sid = w.register_schema(t.replace("/msg/", "/"), "ros1msg", text.encode())
            chans[name] = w.register_channel(name, "ros1", sid)
        for i, name in order:
            t = topics[name][0]
            w.add_message(chans[name], log_ns(i), bytes(store.serialize_ros1(objs[(name, i)], t)),
                          log_ns(i))
        w.finish()

    # A bag as ROS 1 itself writes it: noetic definitions (Header with `uint32 seq`, which
    # ROS 1 serializes first), LZ4 chunks.
    noetic = get_typestore(Stores.ROS1_NOETIC)
    w = Ros1Writer(out / "ros1_noetic.bag")
    w.set_compression(Ros1Writer.CompressionFormat.LZ4)
    with w:
        conns = {name: w.add_connection(name, t, typestore=noetic)
                 for name, (t, _, _, _) in topics.items()}
        for i, name in order:
            t = topics[name][0]
            data = bytes(store.serialize_ros1(objs[(name, i)], t))
            if "header" in topics[name][1][i]:
                data = (1000 + i).to_bytes(4, "little") + data
            assert noetic.deserialize_ros1(data, t) is not None
            w.write(conns[name], log_ns(i), data)

    expected = {"topics": {}, "skipped": {}}
    for name, (_, _, exp, skip) in topics.items():
        if skip:
            expected["skipped"][name] = skip
            continue
        exp["log"] = [log_ns(i) * 1e-9 for i in range(N)]
        exp["stamps"] = (exp["log"] if exp.pop("unstamped", False)
                         else [s + n * 1e-9 for s, n in (stamp(i) for i in range(N))])
        expected["topics"][name] = exp
    # Without stored definitions only the standard types roverlog ships decode; every
    # other topic is skipped for that reason.
    standard = {f"sensor_msgs/msg/{t}" for t in
                ("Imu", "NavSatFix", "Image", "CompressedImage", "PointCloud2", "LaserScan")}
    pre_iron = {"skipped": dict(expected["skipped"]), "not_imported": []}
    for name, (t, _, _, _) in topics.items():
        if t not in standard:
            pre_iron["skipped"][name] = "stores no message definition"
            if name in expected["topics"]:
                pre_iron["not_imported"].append(name)
    assert pre_iron["not_imported"], "the test needs a non-standard topic"
    expected["pre_iron"] = pre_iron
    (out / "expected.json").write_text(json.dumps(expected))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
