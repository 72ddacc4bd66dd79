"""roverlog.Driver's sidecar files (`files=`, docs/protocol.md 2.6) against the real daemon
(`ROVERLOG_BIN`, set by tests/python/package.rs): they land byte for byte in every trace's
sensor directory, and a bad one is refused naming it, losing nothing already sent."""
import json
import os

import numpy as np
import pytest

import roverlog

# The daemon fixture and the IMU sensor of the driver's own tests (imported by name: pytest
# would collect an imported test function again).
from test_driver import IMU, daemon, imu_sample  # noqa: F401

# Every byte value, and a newline and NUL: the bytes go through no encoding.
BLOB = bytes(range(256)) * 3 + b"\n\0end"
LIDAR = json.dumps({"beam_altitude_angles": [1.5, -0.25], "prod_sn": "992109000123"}).encode()


def send_some(d, start, n):
    for i in range(start, start + n):
        d.send(1.7e9 + i * 0.01, *imu_sample(i))


def read_file(trace, sensor, name):
    with open(os.path.join(trace, sensor, name), "rb") as f:
        return f.read()


def samples(trace, sensor):
    return roverlog.Trace(trace)[sensor].channels["n"].read().tolist()


def test_files_land_byte_identical_in_every_trace_the_driver_records_into(daemon):
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True,
                         files={"lidar.json": LIDAR, "blob.bin": bytearray(BLOB)}) as d:
        assert d.files_taken, "the daemon replied \"files\": true"
        send_some(d, 0, 100)
        assert d.sync() == 100
        first = d.trace
        assert daemon.ctl({"cmd": "rotate"})["ok"]
        send_some(d, 100, 50)
        d.sync()
        assert d.trace != first, "the rotation moved the driver into a new trace"
        assert d.files_taken
    # A list of pairs, and a memoryview of a numpy array, work the same.
    with roverlog.Driver(daemon.socket, "gps", [("fix", "raw", "f8", [2])],
                         files=[("cal.bin", memoryview(np.arange(4, dtype=np.float64)))]) as g:
        g.send(1.7e9, np.array([1.0, 2.0]))
        assert g.files_taken
    # Without files: nothing claimed.
    with roverlog.Driver(daemon.socket, "plain", [("i", "raw", "u8", [])]) as p:
        assert not p.files_taken
        p.send(1.7e9, np.uint64(1))
    daemon.stop()
    traces = daemon.traces()
    assert len(traces) == 2, traces
    for trace in traces:
        assert read_file(trace, "imu", "lidar.json") == LIDAR, trace
        assert read_file(trace, "imu", "blob.bin") == BLOB, trace
    assert samples(traces[0], "imu") == list(range(100))
    assert samples(traces[1], "imu") == list(range(100, 150))
    assert read_file(traces[1], "gps", "cal.bin") == np.arange(4, dtype=np.float64).tobytes()
    plain = set(os.listdir(os.path.join(traces[1], "plain")))
    assert {"meta.json", "ts", "i"} <= plain and not plain & {"lidar.json", "blob.bin", "cal.bin"}, plain


@pytest.mark.parametrize("files, error, match", [
    ({"meta.json": b"{}"}, ValueError, r'invalid file name "meta\.json": is reserved \(meta\.json\)'),
    ({"a/b": b"x"}, ValueError, r'invalid file name "a/b": contains a path separator'),
    ({"..\\up": b"x"}, ValueError, r'invalid file name "\.\.\\\\up": contains a path separator'),
    ({"x..y": b"x"}, ValueError, r'invalid file name "x\.\.y": contains \'\.\.\' or is \'\.\''),
    ({".hidden": b"x"}, ValueError, r'invalid file name "\.hidden": starts with \'\.\' \(names starting with \'\.\' are the daemon\'s own\)'),
    ({"": b"x"}, ValueError, r'invalid file name "": empty'),
    ({"a\nb": b"x"}, ValueError, r'invalid file name "a\\nb": contains a control character'),
    ([("lidar.json", b"1"), ("lidar.json", b"2")], ValueError, r'file "lidar\.json": given twice'),
    ({"lidar.json": "{}"}, TypeError, r'file "lidar\.json": its contents are a str'),
    ({"lidar.json": 5}, TypeError, r'file "lidar\.json": its contents \(int\) are not bytes'),
    ([(b"lidar.json", b"{}")], TypeError, r"entry 0: the name b'lidar\.json' is not a str"),
    ([("ok", b""), ("lidar.json",)], TypeError, r"entry 1 \(\('lidar\.json',\)\) is not a \(name, bytes\) pair"),
    ("lidar.json", TypeError, r"files: expected a mapping .* got str"),
    (5, TypeError, r"files: expected a mapping .* got int"),
])
def test_a_bad_file_raises_naming_it_and_loses_nothing_sent(daemon, files, error, match):
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True, files={"lidar.json": LIDAR}) as d:
        send_some(d, 0, 20)
        with pytest.raises(error, match=match):
            roverlog.Driver(daemon.socket, "bad", IMU, files=files)
        send_some(d, 20, 20)
        assert d.sync() == 40
    daemon.stop()
    (trace,) = daemon.traces()
    assert samples(trace, "imu") == list(range(40))
    assert read_file(trace, "imu", "lidar.json") == LIDAR
    assert not os.path.exists(os.path.join(trace, "bad")), "the refused sensor left a directory"


def test_what_only_the_daemon_knows_it_refuses_naming_the_file_and_the_trace_keeps_its_own(daemon):
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True, files={"lidar.json": LIDAR}) as d:
        send_some(d, 0, 30)
        assert d.sync() == 30
        # A channel file's name: only the daemon knows the sensor's files.
        with pytest.raises(roverlog.FormatError, match=r'sensor "imu2": file "acc" is the name of one of its channel files'):
            roverlog.Driver(daemon.socket, "imu2", IMU, files={"acc": b"x"})
        # Over the 1 MiB the daemon takes.
        with pytest.raises(roverlog.FormatError, match=r"the files hold 1048577 bytes, over the limit of 1048576"):
            roverlog.Driver(daemon.socket, "big", IMU, files={"big.bin": bytes(1 << 20), "one": b"1"})
    # The same sensor again in the same trace with another lidar.json: its samples were taken
    # with the first one, so the daemon refuses, naming the file, and keeps what is there.
    with pytest.raises(roverlog.FormatError, match=r'sensor "imu": file "lidar\.json" differs from the one in .*imu'):
        roverlog.Driver(daemon.socket, "imu", IMU, seq=True, files={"lidar.json": LIDAR + b" "})
    # The same bytes resume the sensor.
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True, files={"lidar.json": LIDAR}) as d:
        assert d.files_taken
        send_some(d, 30, 10)
        assert d.sync() == 40
    daemon.stop()
    (trace,) = daemon.traces()
    assert samples(trace, "imu") == list(range(40))
    assert read_file(trace, "imu", "lidar.json") == LIDAR
    for refused in ("imu2", "big"):
        assert not os.path.exists(os.path.join(trace, refused)), refused
