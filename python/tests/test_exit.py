"""No abort at exit (issue 36): a thread Python ends at shutdown while it is inside a roverlog
read (a `stream_prefetch()` loop left early, a daemon thread reading, a worker process's
threads) must not take the process down. On Python < 3.14 such a thread is ended by
`pthread_exit`, a forced unwind; caught by Rust, it aborted the interpreter with `FATAL:
exception not rethrown` and exit code 134. Each case runs in a fresh interpreter, several
times (the abort needs a thread inside a read at the moment of shutdown), and must exit 0
with nothing on stderr."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import images, pattern, write_channel

RUNS = 3
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """A sensor whose reads take a while (so threads are inside them at exit): a 400-sample
    `lzmaf` channel of 64 KiB samples, 200 JPEG frames of 640x480, and a `raw` channel."""
    import json

    d = str(tmp_path_factory.mktemp("exit") / "sensor")
    os.makedirs(d)
    n = 400
    (1.7e9 + np.arange(n) / 10.0).astype("<f8").tofile(os.path.join(d, "ts"))
    write_channel(os.path.join(d, "rng"), "lzmaf", "u2", pattern(1, n, (128, 256), np.uint16))
    write_channel(os.path.join(d, "img"), "jpg", "u1", images(200, 240, 320))
    write_channel(os.path.join(d, "acc"), "raw", "f4", pattern(2, n, (1024,), np.float32))
    meta = {
        "ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"},
        "rng": {"format": "lzmaf", "type": "u2", "shape": [128, 256], "desc": ""},
        "img": {"format": "jpg", "type": "u1", "shape": [240, 320, 3], "desc": ""},
        "acc": {"format": "raw", "type": "f4", "shape": [1024], "desc": ""},
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f)
    return d


def exits_cleanly(tmp_path, script, *args):
    """Runs `script` `RUNS` times in a new interpreter; each run must exit 0, stderr empty."""
    path = tmp_path / "script.py"
    path.write_text(script)
    for run in range(RUNS):
        # Run from here: in python/, the source package would be imported (see conftest.py).
        p = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                           timeout=120, cwd=HERE)
        assert p.returncode == 0 and not p.stderr.strip(), (
            f"run {run}: exit code {p.returncode} (-6 or 134: aborted at shutdown)\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        assert p.stdout.strip().endswith("done"), p.stdout


STREAM_AND_BREAK = """
import sys
from roverlog.redrover import channels
d = sys.argv[1]
for name, typ, shape in (("rng", "u2", [128, 256]), ("img", "u1", [240, 320, 3])):
    fmt = "lzmaf" if name == "rng" else "jpg"
    ch = channels.from_config(d + "/" + name, fmt, typ, shape)
    for i, x in enumerate(ch.stream_prefetch(size=1000, batch=8)):
        assert x.shape[1:] == tuple(shape)
        if i == 2:
            break
print("done")
"""


def test_leaving_a_stream_prefetch_loop_early_exits_0(heavy, tmp_path):
    exits_cleanly(tmp_path, STREAM_AND_BREAK, heavy)


DAEMON_READERS = """
import sys, threading, time
import roverlog
from roverlog.redrover import channels
d = sys.argv[1]
sensor = roverlog.Sensor(d)
reading = threading.Barrier(7)
def forever(read):
    reading.wait()
    while True:
        read()
lz = channels.from_config(d + "/rng", "lzmaf", "u2", [128, 256])
jp = channels.from_config(d + "/img", "jpg", "u1", [240, 320, 3])
for read in (lambda: lz.read(0, 300), lambda: jp.read(0, 100), lambda: jp[7],
             lambda: sensor["rng"].read(10, 200), lambda: sensor["img"].read(0, 50),
             lambda: sensor["acc"].read(0, 400)):
    threading.Thread(target=forever, args=(read,), daemon=True).start()
reading.wait()
time.sleep(0.3)
print("done")
"""


def test_daemon_threads_inside_reads_at_exit_exit_0(heavy, tmp_path):
    exits_cleanly(tmp_path, DAEMON_READERS, heavy)


WORKERS_KILLED = """
import multiprocessing as mp, os, signal, sys, threading
from roverlog.redrover import channels
d = sys.argv[1]

def worker(k, out, count, parent):
    # A loader's worker: reads samples for the parent, and more in a thread of its own (as
    # prefetching loaders do); it ends itself if the parent is gone (no orphan left behind).
    ch = channels.from_config(d + "/rng", "lzmaf", "u2", [128, 256])
    jp = channels.from_config(d + "/img", "jpg", "u1", [240, 320, 3])
    def forever():
        while os.getppid() == parent:
            ch.read(0, 100)
        os._exit(1)
    threading.Thread(target=forever, daemon=True).start()
    for i in range(count):
        if os.getppid() != parent:
            os._exit(1)
        out.put((k, int(jp.read((i * 7) % 150, 40).sum())))
    # Returns with its thread inside a read: the worker's interpreter shuts down around it
    # (a spawned worker runs Python's finalization; a forked one leaves by os._exit).

if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[2])
    out = ctx.Queue()
    finite = ctx.Process(target=worker, args=(0, out, 3, os.getpid()), daemon=True)
    endless = [ctx.Process(target=worker, args=(k, out, 10**9, os.getpid()), daemon=True) for k in (1, 2)]
    for p in [finite, *endless]:
        p.start()
    for _ in range(6):  # the loop left early
        out.get(timeout=60)
    finite.join(60)
    os.kill(endless[0].pid, signal.SIGKILL)
    endless[0].join(60)
    print("worker that returned:", finite.exitcode, "worker killed:", endless[0].exitcode)
    assert finite.exitcode == 0 and endless[0].exitcode == -signal.SIGKILL
    # The last worker is left running: the interpreter's exit terminates it.
    print("done")
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_loader_left_early_with_its_workers_killed_exits_0(heavy, tmp_path, method):
    exits_cleanly(tmp_path, WORKERS_KILLED, heavy, method)
