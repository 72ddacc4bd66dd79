"""How many threads a bulk read uses (issue 27): one per core, one in a worker process,
what `set_threads` or `ROVERLOG_THREADS` says otherwise."""
import multiprocessing
import os
import subprocess
import sys
import threading
import time

import pytest

import roverlog


@pytest.fixture(autouse=True)
def automatic():
    roverlog.set_threads(None)
    yield
    roverlog.set_threads(None)


def _cores():
    return len(os.sched_getaffinity(0))


def _threads_in_a_new_interpreter(env):
    # Run from here: in python/, `-c` would import the source package (see conftest.py).
    out = subprocess.run(
        [sys.executable, "-c", "import roverlog; print(roverlog.threads())"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    return out


def test_set_threads_and_the_environment_choose_the_count():
    assert roverlog.threads() == _cores()
    roverlog.set_threads(3)
    assert roverlog.threads() == 3
    roverlog.set_threads(None)
    assert roverlog.threads() == _cores()
    for bad, cls in [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)]:
        with pytest.raises(cls):
            roverlog.set_threads(bad)
    out = _threads_in_a_new_interpreter({"ROVERLOG_THREADS": "5"})
    assert out.stdout.strip() == "5", out.stderr
    out = _threads_in_a_new_interpreter({"ROVERLOG_THREADS": "many"})
    assert out.returncode != 0 and 'ROVERLOG_THREADS="many"' in out.stderr


def _threads_here(_):
    import roverlog

    return roverlog.threads()


def test_a_worker_process_reads_on_one_thread_unless_its_parent_chose():
    for method in ["fork", "spawn", "forkserver"]:
        with multiprocessing.get_context(method).Pool(2) as pool:
            assert pool.map(_threads_here, range(2)) == [1, 1], method
    roverlog.set_threads(3)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_threads_here, [0]) == [3]


def _threads_started_during(read, seconds):
    """How many threads this process started while `read` ran in a loop for `seconds`: the
    ids in /proc/self/task that were not there before, seen by polling from another thread
    (reads release the GIL); threads of an earlier read still ending do not count."""
    before = set(os.listdir("/proc/self/task"))
    new, stop = set(), threading.Event()

    def poll():
        me = str(threading.get_native_id())
        while not stop.is_set():
            new.update(set(os.listdir("/proc/self/task")) - before - {me})

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            read()
    finally:
        stop.set()
        poller.join(timeout=10)
    assert not poller.is_alive(), "the /proc/self/task poller did not stop"
    return len(new)


def test_set_threads_1_makes_a_bulk_read_start_no_thread(trace):
    root, _ = trace
    img = roverlog.Trace(root)["camera"].channels["img"]
    # The measure sees the decoding threads when there are some (bounded: 10 s at most).
    roverlog.set_threads(4)
    seen, deadline = 0, time.monotonic() + 10
    while seen < 1 and time.monotonic() < deadline:
        seen = _threads_started_during(img.read, 0.5)
    assert seen >= 1, "4 decoding threads were never seen in /proc/self/task"
    roverlog.set_threads(1)
    assert _threads_started_during(img.read, 1.0) == 0
