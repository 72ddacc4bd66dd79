"""roverlog.Driver against the real daemon (`ROVERLOG_BIN`, set by tests/python/package.rs)."""
import json
import os
import signal
import socket as socketlib
import subprocess
import time
import warnings

import numpy as np
import pytest

import roverlog


class Daemon:
    def __init__(self, tmp):
        self.dir = str(tmp)
        self.socket = os.path.join(self.dir, "run", "ingest.sock")
        self.data = os.path.join(self.dir, "data")
        self.config = os.path.join(self.dir, "roverlog.json")
        with open(self.config, "w") as f:
            json.dump({"data_root": self.data, "ingest_socket": self.socket,
                       "control_socket": os.path.join(self.dir, "run", "control.sock"),
                       "min_free_bytes": 0}, f)
        self.proc = None

    def start(self):
        binary = os.environ.get("ROVERLOG_BIN")
        assert binary, "ROVERLOG_BIN is not set: run these tests through `cargo test --test python`"
        # The child holds the log open; ours closes once the child has it.
        with open(os.path.join(self.dir, "daemon.log"), "ab") as log:
            self.proc = subprocess.Popen([binary, "daemon", "--config", self.config], stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        # The control socket comes after the ingest socket: ctl() right after would race it.
        control = os.path.join(self.dir, "run", "control.sock")
        while not (os.path.exists(self.socket) and os.path.exists(control)):
            assert self.proc.poll() is None, f"the daemon exited: {self.log()}"
            assert time.monotonic() < deadline, f"no ingest and control sockets after 30 s: {self.log()}"
            time.sleep(0.02)

    def log(self):
        with open(os.path.join(self.dir, "daemon.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the daemon did not stop within 30 s after {sig}: {self.log()}")

    def ctl(self, cmd):
        s = socketlib.socket(socketlib.AF_UNIX)
        s.settimeout(30)
        s.connect(os.path.join(self.dir, "run", "control.sock"))
        s.sendall(json.dumps(cmd).encode() + b"\n")
        reply = s.makefile().readline()
        s.close()
        return json.loads(reply)

    def status(self):
        return self.ctl({"cmd": "status"})

    def traces(self):
        return sorted(os.path.join(self.data, t) for t in os.listdir(self.data) if not t.startswith("."))


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    d.start()
    yield d
    if d.proc.poll() is None:
        d.stop()


IMU = [("acc", "raw", "f4", [3], "m/s^2"), {"name": "n", "format": "raw", "type": "u8", "shape": []}]


def imu_sample(i):
    return np.array([i, -i, 0.5 * i], dtype=np.float32), np.uint64(i)


def test_every_sample_sent_is_on_disk(daemon):
    n = 5000
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True) as d:
        for i in range(n):
            acc, k = imu_sample(i)
            d.send(1.7e9 + i * 0.01, acc, k)
        assert d.sync() == n
        assert d.sent == n
    daemon.stop()
    (trace,) = daemon.traces()
    imu = roverlog.Trace(trace)["imu"]
    np.testing.assert_array_equal(imu.timestamps, 1.7e9 + np.arange(n) * 0.01)
    np.testing.assert_array_equal(imu.channels["acc"].read(), np.stack([imu_sample(i)[0] for i in range(n)]))
    np.testing.assert_array_equal(imu.channels["n"].read(), np.arange(n, dtype=np.uint64))


def test_a_batch_waits_at_most_max_delay(daemon):
    with roverlog.Driver(daemon.socket, "gps", [("fix", "raw", "f8", [2])], max_delay=0.01) as d:
        d.send(1.7e9, np.array([1.0, 2.0]))
        deadline = time.monotonic() + 10
        path = None
        while time.monotonic() < deadline:
            traces = daemon.traces()
            path = os.path.join(traces[0], "gps", "ts") if traces else None
            if path and os.path.exists(path) and os.path.getsize(path) == 8:
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the one buffered sample never reached the daemon (waited 10 s)")


def test_variable_size_samples_and_bad_input(daemon):
    with roverlog.Driver(daemon.socket, "cam", [("img", "jpg", "u1", [])]) as d:
        d.send(1.7e9, b"\xff\xd8one\xff\xd9")
        d.send(1.7e9 + 1, np.frombuffer(b"\xff\xd8two\xff\xd9", np.uint8))
        with pytest.raises(roverlog.Error, match="2 channel buffers for 1 channels"):
            d.send(1.7e9 + 2, b"a", b"b")
        assert d.sync() == 2
    with roverlog.Driver(daemon.socket, "imu2", IMU) as d:
        with pytest.raises(roverlog.Error, match="12 bytes, expected 12|channel 0: 8 bytes, expected 12"):
            d.send(1.0, np.zeros(2, np.float32), np.uint64(0))
        with pytest.raises(ValueError, match="not C-contiguous"):
            d.send(1.0, np.zeros((3, 2), np.float32)[:, 0], np.uint64(0))
    with pytest.raises(ValueError, match="cannot be sent"):
        roverlog.Driver(daemon.socket, "x", [("a", "lzma", "u1", [1])])
    with pytest.raises(roverlog.Error, match="different|differ"):
        roverlog.Driver(daemon.socket, "imu", [("acc", "raw", "f4", [4])]).close()
        roverlog.Driver(daemon.socket, "imu", [("acc", "raw", "f4", [3])]).close()
    daemon.stop()
    with pytest.raises((FileNotFoundError, ConnectionError, OSError)):
        roverlog.Driver(daemon.socket, "late", IMU, reconnect_timeout=0.2)


def test_a_restart_loses_nothing_the_driver_sent(daemon):
    n = 3000
    # kill -9: the daemon resumes the same trace; the driver resends exactly what is missing.
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True) as d:
        for i in range(n):
            if i == 1000:
                assert d.sync() == 1000
            if i == 2000:
                daemon.stop(signal.SIGKILL)
                daemon.start()
            acc, k = imu_sample(i)
            d.send(1.7e9 + i * 0.01, acc, k)
        assert d.sync() == n
    (trace,) = daemon.traces()
    imu = roverlog.Trace(trace)["imu"]
    np.testing.assert_array_equal(imu.channels["n"].read(), np.arange(n, dtype=np.uint64))
    # kill -9 resent nothing the daemon already had (with seq, a repeat would be counted).
    assert daemon.status()["sensors"]["imu"]["repeats"] == 0
    # SIGTERM: a new trace; the daemon's final count tells the driver what the old one holds,
    # and exactly the rest goes to the new one.
    with roverlog.Driver(daemon.socket, "gps", [("i", "raw", "u8", [])]) as d:
        for i in range(n):
            if i == 1000:
                d.sync()
            if i == 2000:
                daemon.stop()
                daemon.start()
            d.send(1.7e9 + i, np.uint64(i))
        d.sync()
    got = []
    for t in daemon.traces():
        if os.path.isdir(os.path.join(t, "gps")):
            got += roverlog.Trace(t)["gps"].channels["i"].read().tolist()
    assert len(daemon.traces()) == 2
    assert sorted(got) == list(range(n)), "every sample in exactly one trace"


def test_a_sigterm_while_sending_leaves_every_sample_exactly_once(daemon):
    n = 20000
    with roverlog.Driver(daemon.socket, "gps", [("i", "raw", "u8", [])], seq=True, max_bytes=4096) as d:
        for i in range(n):
            if i == n // 4:
                # Mid-stream: frames written, in the socket and in the driver's batch.
                daemon.stop()
                daemon.start()
            if i % 2000 == 1999:
                d.sync()
            d.send(1.7e9 + i, np.uint64(i), seq=i)
        durable = d.sync()
    old, new = (roverlog.Trace(t)["gps"].channels["i"].read().tolist() for t in daemon.traces())
    assert n // 8 <= len(old) <= n // 4, len(old)
    # The new trace starts where the old one ends: nothing in both, nothing in neither.
    assert old == list(range(len(old))) and new == list(range(len(old), n)), (len(old), new[:3])
    assert durable == len(new)


def test_with_seq_a_restarted_driver_resending_its_own_log_writes_nothing_twice(daemon):
    # A driver process that keeps its own log of samples and, restarted, resends the ones it
    # never saw acknowledged: those the daemon already wrote are dropped as repeats (dedup).
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True) as d:
        for i in range(100):
            acc, k = imu_sample(i)
            d.send(1.7e9 + i * 0.01, acc, k, seq=i)
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True) as d:
        for i in range(50, 150):
            acc, k = imu_sample(i)
            d.send(1.7e9 + i * 0.01, acc, k, seq=i)
        assert d.sync() == 150
    assert daemon.status()["sensors"]["imu"]["repeats"] == 50
    # Without dedup the daemon writes what it is sent, as before the opt-in existed.
    with roverlog.Driver(daemon.socket, "imu", IMU, seq=True, dedup=False) as d:
        acc, k = imu_sample(149)
        d.send(1.7e9 + 149 * 0.01, acc, k, seq=149)
        assert d.sync() == 151
    daemon.stop()
    (trace,) = daemon.traces()
    n = roverlog.Trace(trace)["imu"].channels["n"].read().tolist()
    assert n == list(range(150)) + [149]


def test_sending_while_nothing_records_warns_once_and_sync_says_why(daemon):
    assert daemon.ctl({"cmd": "stop"})["ok"]
    with roverlog.Driver(daemon.socket, "gps", [("i", "raw", "u8", [])]) as d:
        assert not d.recording
        with pytest.warns(roverlog.NotRecordingWarning, match="not recording.*discarded") as w:
            for i in range(10):
                d.send(1.7e9 + i, np.uint64(i))
            r = d.sync()
        mine = [x for x in w if issubclass(x.category, roverlog.NotRecordingWarning)]
        assert len(mine) == 1, "warned once"
        assert mine[0].filename == __file__, "the warning points at the caller's line"
        assert r == 0 and isinstance(r, int) and not r.recording
        assert "not recording" in r.reason and daemon.socket in r.reason and '"gps"' in r.reason
        assert daemon.ctl({"cmd": "start"})["ok"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", roverlog.NotRecordingWarning)
            d.send(1.7e9 + 10, np.uint64(10))
            r = d.sync()
        assert r == 1 and r.recording and r.reason is None
        assert d.recording
    deadline = time.monotonic() + 10
    while daemon.status()["sensors"].get("gps", {}).get("discarded") != 10:
        assert time.monotonic() < deadline, f"discarded never reached 10: {daemon.status()}"
        time.sleep(0.02)


def test_a_missing_socket_warns_while_waiting_then_names_the_socket(tmp_path):
    missing = str(tmp_path / "run" / "ingest.sock")
    t0 = time.monotonic()
    with pytest.warns(roverlog.DaemonWaitWarning, match="waiting for the roverlog daemon at .*ingest.sock") as w:
        with pytest.raises(roverlog.FileError, match=f"no roverlog daemon at {missing}") as e:
            roverlog.Driver(missing, "gps", [("i", "raw", "u8", [])], connect_timeout=1.5)
    assert len(w) == 1 and w[0].filename == __file__, [(x.filename, str(x.message)) for x in w]
    took = time.monotonic() - t0
    assert 1.5 <= took < 5, took
    assert isinstance(e.value, FileNotFoundError)
    # Shorter than the notice: an error, and no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FileNotFoundError):
            roverlog.Driver(missing, "gps", [("i", "raw", "u8", [])], connect_timeout=0.3)
    # A warning turned into an error ends the wait at once.
    t0 = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error", roverlog.DaemonWaitWarning)
        with pytest.raises(roverlog.DaemonWaitWarning):
            roverlog.Driver(missing, "gps", [("i", "raw", "u8", [])], connect_timeout=30)
    assert time.monotonic() - t0 < 10
