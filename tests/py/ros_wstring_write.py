"""Writes an MCAP file of a custom ROS 2 message with `wstring` fields, for
tests/interop/ros_wstring.rs, and what importing it must give.

usage: ros_wstring_write.py OUTDIR

Neither rosbags nor mcap-ros2-support serializes a wstring, so the CDR is built here by hand,
in both wire forms ROS 2 writers use (crates/ros/src/wire/wide.rs): a uint32 count of UTF-16
code units, then each unit as a uint32 (every rmw on Linux) or as a uint16 (Fast-CDR 2.x's
own form). Written with the `mcap` package's writer.

- /label4: 4-byte characters, little-endian; its first message's wstrings are empty (they
  decide nothing), the next ones hold non-ASCII text and a surrogate pair;
- /label2: 2-byte characters, big-endian;
- /label_bad: a wstring whose bytes fit neither form: skipped, the reason naming the field;
- /label_mixed: 4-byte characters, then from message 2 on 2-byte ones: the form its first
  non-empty wstring told holds for the topic, so message 2 does not decode and the topic is
  skipped, as any topic with a message that does not decode;
- /label_ros1: the same type as a ROS 1 (`ros1msg`) definition: ROS 1 has no wstring, skipped.

OUTDIR/wstring.mcap and OUTDIR/expected.json: per topic the sensor, header stamps and the
`score` and `count` values (the numbers after the wstrings, right only when the wstrings'
bytes were read in the right form), and per skipped topic a word of the reason.
"""

import json
import sys
from pathlib import Path

import numpy as np
from mcap.writer import Writer as McapWriter

N = 4
T0 = 1_700_000_000
DEFINITION = """std_msgs/Header header
wstring label
float64 score
wstring<=8 unit
uint32 count
================================================================================
MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
"""
LABELS = ["", "wé€ k", "\U0001d11e clef", "Grüße"]
UNITS = ["", "m/s", "°C", "ü"]


class Cdr:
    """Plain CDR, aligned relative to the end of the encapsulation header."""

    def __init__(self, big):
        self.order = "big" if big else "little"
        self.body = bytearray()
        self.head = bytes([0, 0 if big else 1, 0, 0])

    def align(self, n):
        self.body += bytes(-len(self.body) % n)

    def uint(self, v, n):
        self.align(n)
        self.body += v.to_bytes(n, self.order, signed=v < 0)

    def f64(self, v):
        self.align(8)
        self.body += np.array([v], dtype=">f8" if self.order == "big" else "<f8").tobytes()

    def string(self, s):
        b = s.encode() + b"\0"
        self.uint(len(b), 4)
        self.body += b

    def wstring(self, s, size):
        units = np.frombuffer(s.encode("utf-16-le"), dtype="<u2").tolist()
        self.uint(len(units), 4)
        for u in units:
            self.uint(u, size)

    def bytes(self):
        return self.head + bytes(self.body)


def message(i, size, big):
    c = Cdr(big)
    c.uint(T0 + i, 4)
    c.uint(1000 * i, 4)
    c.string("base")
    c.wstring(LABELS[i], size)
    c.f64(0.5 + i)
    c.wstring(UNITS[i], size)
    c.uint(100 + i, 4)
    return c.bytes()


def main():
    out = Path(sys.argv[1])
    with open(out / "wstring.mcap", "wb") as f:
        w = McapWriter(f)
        w.start()
        ros2 = w.register_schema("roverlog_test/msg/Label", "ros2msg", DEFINITION.encode())
        ros1 = w.register_schema("roverlog_test/Label", "ros1msg", DEFINITION.encode())
        chans = {
            "/label4": w.register_channel("/label4", "cdr", ros2),
            "/label2": w.register_channel("/label2", "cdr", ros2),
            "/label_bad": w.register_channel("/label_bad", "cdr", ros2),
            "/label_mixed": w.register_channel("/label_mixed", "cdr", ros2),
            "/label_ros1": w.register_channel("/label_ros1", "ros1", ros1),
        }
        for i in range(N):
            t = (T0 + i) * 1_000_000_000 + 1000 * i + 5_000_000
            msgs = {
                "/label4": message(i, 4, False),
                "/label2": message(i, 2, True),
                "/label_mixed": message(i, 4 if i < 2 else 2, False),
                "/label_ros1": bytes(8),
            }
            # Three characters in 9 bytes: neither 4-byte (12) nor 2-byte (6 + padding).
            bad = Cdr(False)
            bad.uint(T0 + i, 4)
            bad.uint(0, 4)
            bad.string("base")
            bad.uint(3, 4)
            bad.body += b"a\0b\0c\0d\0e"
            msgs["/label_bad"] = bad.bytes()
            for name, data in msgs.items():
                w.add_message(chans[name], t, data, t)
        w.finish()
    topic = {
        "stamps": [T0 + i + 1000 * i * 1e-9 for i in range(N)],
        "score": [0.5 + i for i in range(N)],
        "count": [100 + i for i in range(N)],
    }
    expected = {
        "topics": {"/label4": dict(topic, sensor="label4"),
                   "/label2": dict(topic, sensor="label2")},
        "skipped": {"/label_bad": "wstring label", "/label_ros1": "ROS 1 has no wide strings",
                    "/label_mixed": "message 2 does not decode"},
    }
    (out / "expected.json").write_text(json.dumps(expected))


main()
