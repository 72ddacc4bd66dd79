"""Writes the seeds of the ROS recording targets: small recordings of every kind roverlog
imports, written by the Python peers (rosbags, mcap, mcap-ros2-support), plus damaged copies.

- fuzz/corpus-seeds/ros_mcap/: ROS 2 (CDR) in zstd, lz4 and uncompressed chunks and unchunked,
  ROS 1 in lz4 chunks, what rosbags' rosbag2 writer stores (`rosbag2-data.mcap`, also the
  data file of the `rosbag2_dir` target), and `bad-*` copies: a wrong chunk CRC, a wrong
  uncompressed size (1 GiB: the limit, a few bytes declaring it must not reserve it),
  a flipped compressed byte, a record length past the end or over the limit;
- fuzz/corpus-seeds/ros1_bag/: bz2, lz4 and uncompressed chunks, noetic definitions (Header
  with `seq`), an unindexed bag (cut at its index, index_pos 0), and `bad-*` copies;
- fuzz/corpus-seeds/rosbag2_dir/: rosbags' metadata.yaml (naming `data.mcap`), an inline
  list, and lists naming a missing file, a directory, a parent or an absolute path.

usage: .venv/bin/python fuzz/ros_container_seeds.py   (from the repository root)
"""

import struct
import tempfile
from pathlib import Path

import cv2
import numpy as np
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Ros2Writer
from rosbags.typesys import Stores, get_typestore

store = get_typestore(Stores.ROS2_HUMBLE)
noetic = get_typestore(Stores.ROS1_NOETIC)
T = store.types
root = Path("fuzz/corpus-seeds")


def header(i):
    return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=10 + i, nanosec=7),
                                    frame_id="f")


V3 = T["geometry_msgs/msg/Vector3"]
ok, jpg = cv2.imencode(".jpg", np.full((8, 8, 3), 90, dtype=np.uint8))
assert ok
MSGS = {
    "/imu": ("sensor_msgs/msg/Imu", [T["sensor_msgs/msg/Imu"](
        header=header(i), orientation=T["geometry_msgs/msg/Quaternion"](x=0.1, y=0.2, z=0.3, w=0.9),
        orientation_covariance=np.zeros(9), angular_velocity=V3(x=1, y=2, z=i),
        angular_velocity_covariance=np.zeros(9), linear_acceleration=V3(x=4, y=5, z=6),
        linear_acceleration_covariance=np.zeros(9)) for i in range(2)]),
    "/scan": ("sensor_msgs/msg/LaserScan", [T["sensor_msgs/msg/LaserScan"](
        header=header(i), angle_min=-1, angle_max=1, angle_increment=0.5, time_increment=0,
        scan_time=0.1, range_min=0, range_max=9, ranges=np.arange(5, dtype=np.float32) + i,
        intensities=np.zeros(0, dtype=np.float32)) for i in range(2)]),
    "/cam": ("sensor_msgs/msg/CompressedImage", [T["sensor_msgs/msg/CompressedImage"](
        header=header(i), format="jpeg", data=np.frombuffer(jpg.tobytes(), dtype=np.uint8))
        for i in range(2)]),
    "/img": ("sensor_msgs/msg/Image", [T["sensor_msgs/msg/Image"](
        header=header(i), height=2, width=3, encoding="mono8", is_bigendian=0, step=3,
        data=np.arange(6, dtype=np.uint8) + i) for i in range(2)]),
}
ORDER = [(i, topic) for i in range(2) for topic in MSGS]


def log_ns(i):
    return (10 + i) * 1_000_000_000 + 9


def mcap(compression, ros1=False, chunked=True):
    with tempfile.TemporaryFile() as f:
        w = McapWriter(f, compression=compression, use_chunking=chunked, chunk_size=4096)
        w.start()
        chans = {}
        for topic, (t, _) in MSGS.items():
            text, _ = store.generate_msgdef(t, ros_version=1 if ros1 else 2)
            name = t.replace("/msg/", "/") if ros1 else t
            sid = w.register_schema(name, "ros1msg" if ros1 else "ros2msg", text.encode())
            chans[topic] = w.register_channel(topic, "ros1" if ros1 else "cdr", sid)
        for i, topic in ORDER:
            t, msgs = MSGS[topic]
            ser = store.serialize_ros1 if ros1 else store.serialize_cdr
            w.add_message(chans[topic], log_ns(i), bytes(ser(msgs[i], t)), log_ns(i))
        w.finish()
        f.seek(0)
        return f.read()


def bag(compression, typestore=store, seq=False):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.bag"
        w = Ros1Writer(path)
        if compression is not None:
            w.set_compression(compression)
        w.chunk_threshold = 600  # a few chunks
        with w:
            conns = {topic: w.add_connection(topic, t, typestore=typestore)
                     for topic, (t, _) in MSGS.items()}
            for i, topic in ORDER:
                t, msgs = MSGS[topic]
                data = bytes(store.serialize_ros1(msgs[i], t))
                if seq:
                    data = (100 + i).to_bytes(4, "little") + data
                w.write(conns[topic], log_ns(i), data)
        return path.read_bytes()


def records(data):
    """MCAP records of the data section: (offset, opcode, body start, body end)."""
    pos, out = 8, []
    while pos + 9 <= len(data):
        op, n = data[pos], struct.unpack_from("<Q", data, pos + 1)[0]
        out.append((pos, op, pos + 9, pos + 9 + n))
        if op in (0x0F, 0x02):
            break
        pos += 9 + n
    return out


def first_chunk(data):
    return next(r for r in records(data) if r[1] == 0x06)


def put(data, at, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


def write(target, name, data):
    assert len(data) < 64 << 10, (name, len(data))
    (root / target).mkdir(parents=True, exist_ok=True)
    (root / target / name).write_bytes(data)


# --- MCAP --------------------------------------------------------------------------------
zst = mcap(CompressionType.ZSTD)
write("ros_mcap", "ros2-zstd.mcap", zst)
write("ros_mcap", "ros2-lz4.mcap", mcap(CompressionType.LZ4))
write("ros_mcap", "ros2-none.mcap", mcap(CompressionType.NONE))
write("ros_mcap", "ros2-unchunked.mcap", mcap(CompressionType.NONE, chunked=False))
write("ros_mcap", "ros1-lz4.mcap", mcap(CompressionType.LZ4, ros1=True))
# A chunk's body: start u64, end u64, uncompressed size u64, CRC u32, compression string, ...
_, _, body, _ = first_chunk(zst)
write("ros_mcap", "bad-chunk-crc.mcap", put(zst, body + 24, "<I", 0xDEADBEEF))
size = struct.unpack_from("<Q", zst, body + 16)[0]
write("ros_mcap", "bad-chunk-size.mcap", put(zst, body + 16, "<Q", size + 1))
write("ros_mcap", "bad-chunk-huge.mcap", put(zst, body + 16, "<Q", 1 << 40))
# Exactly the limit: refused once decoded, without reserving 1 GiB first (a fuzz finding).
write("ros_mcap", "bad-chunk-gib.mcap", put(zst, body + 16, "<Q", 1 << 30))
b = bytearray(zst)
b[first_chunk(zst)[3] - 5] ^= 0x55
write("ros_mcap", "bad-chunk-flip.mcap", bytes(b))
write("ros_mcap", "bad-record-past-end.mcap", put(zst, 9, "<Q", len(zst)))
write("ros_mcap", "bad-record-huge.mcap", put(zst, 9, "<Q", 1 << 62))

with tempfile.TemporaryDirectory() as d:
    with Ros2Writer(Path(d) / "data", version=8, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/imu", MSGS["/imu"][0], typestore=store)
        w.write(conn, log_ns(0), store.serialize_cdr(MSGS["/imu"][1][0], MSGS["/imu"][0]))
    files = sorted(p.name for p in (Path(d) / "data").iterdir())
    assert files == ["data.mcap", "metadata.yaml"], files
    write("ros_mcap", "rosbag2-data.mcap", (Path(d) / "data/data.mcap").read_bytes())
    meta = (Path(d) / "data/metadata.yaml").read_text()

# --- rosbag2 metadata.yaml ---------------------------------------------------------------
assert "- data.mcap" in meta, meta
write("rosbag2_dir", "rosbags.yaml", meta.encode())
write("rosbag2_dir", "inline.yaml",
      b"rosbag2_bagfile_information:\n  storage_identifier: 'mcap'\n"
      b"  relative_file_paths: [\"data.mcap\", data.mcap]\n")
write("rosbag2_dir", "sqlite3.yaml",
      meta.replace("storage_identifier: mcap", "storage_identifier: sqlite3").encode())
for name, listed in [("bad-missing", "data_1.mcap"), ("bad-dir", "sub"),
                     ("bad-parent", "sub/../../data.mcap"), ("bad-absolute", "/etc/hostname")]:
    write("rosbag2_dir", f"{name}.yaml", meta.replace("- data.mcap", f"- {listed}").encode())
write("rosbag2_dir", "bad-storage.yaml",
      meta.replace("storage_identifier: mcap", "storage_identifier: rosbag_v2").encode())
write("rosbag2_dir", "bad-unclosed.yaml",
      b"storage_identifier: mcap\nrelative_file_paths: [data.mcap\n")

# --- ROS 1 bags --------------------------------------------------------------------------
bz2 = bag(Ros1Writer.CompressionFormat.BZ2)
write("ros1_bag", "bz2.bag", bz2)
write("ros1_bag", "lz4.bag", bag(Ros1Writer.CompressionFormat.LZ4))
plain = bag(None)
write("ros1_bag", "none.bag", plain)
write("ros1_bag", "noetic-lz4.bag", bag(Ros1Writer.CompressionFormat.LZ4, noetic, seq=True))


def bag_records(data):
    """(offset, header fields, data start, data end) of every top-level record."""
    pos, out = 13, []
    while pos + 4 <= len(data):
        hlen = struct.unpack_from("<I", data, pos)[0]
        h, fields, p = data[pos + 4:pos + 4 + hlen], {}, 0
        while p < len(h):
            n = struct.unpack_from("<I", h, p)[0]
            k, _, v = h[p + 4:p + 4 + n].partition(b"=")
            fields[k.decode()] = (pos + 4 + p + 4 + len(k) + 1, v)
            p += 4 + n
        dlen = struct.unpack_from("<I", data, pos + 4 + hlen)[0]
        start = pos + 8 + hlen
        out.append((pos, fields, start, start + dlen))
        pos = start + dlen
    return out


# A bag never closed: everything up to its index, index_pos 0 in the bag header.
recs = bag_records(plain)
at, _ = recs[0][1]["index_pos"]
index_pos = struct.unpack_from("<Q", plain, at)[0]
write("ros1_bag", "unindexed.bag", put(plain[:index_pos], at, "<Q", 0))
chunk = next(r for r in bag_records(bz2) if r[1]["op"][1] == b"\x05")
at, size = chunk[1]["size"]
write("ros1_bag", "bad-chunk-size.bag", put(bz2, at, "<I", struct.unpack("<I", size)[0] + 1))
write("ros1_bag", "bad-chunk-huge.bag", put(bz2, at, "<I", 0xFFFFFFFF))
write("ros1_bag", "bad-chunk-gib.bag", put(bz2, at, "<I", 1 << 30))
b = bytearray(bz2)
b[chunk[3] - 3] ^= 0x55
write("ros1_bag", "bad-chunk-flip.bag", bytes(b))
write("ros1_bag", "bad-header-huge.bag", put(bz2, 13, "<I", 1 << 24))
write("ros1_bag", "bad-data-past-end.bag", put(bz2, recs[0][2] - 4, "<I", len(bz2)))
# The compression field names something we do not read.
at, comp = chunk[1]["compression"]
write("ros1_bag", "bad-compression.bag", bz2[:at] + b"zip" + bz2[at + 3:])
