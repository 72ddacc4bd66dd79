"""How many threads a bulk read decodes on (a range of JPEG or lzma frames, a gulp read,
zarr rows): one per core by default, so that one process reading is as fast as the machine.

In a worker process (a `torch.utils.data.DataLoader` worker, any `multiprocessing` child, or
a process forked after roverlog was imported) the default is one thread: eight workers on
eight cores already use every core, and one decoding thread per core in each would only make
them fight. `set_threads(n)` overrides the default, as does the environment variable
`ROVERLOG_THREADS=n`, read when roverlog is imported (in every worker too, since they
inherit the environment); a forked worker keeps what its parent set.
"""
import multiprocessing
import os

from . import _roverlog
from .errors import quoted

ENV = "ROVERLOG_THREADS"


def set_threads(n):
    """Bulk reads use `n` threads (at least 1); `None` restores the default."""
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"set_threads takes an int or None, not {type(n).__name__}")
        if n < 1:
            raise ValueError(f"set_threads: at least 1 thread, not {n}")
    _roverlog.set_threads(n)


def threads():
    """How many threads the next bulk read uses."""
    return _roverlog.threads()


def _in_child():
    """True in a `multiprocessing` child. A spawned child imports its parent's modules before
    `parent_process()` is set, but after its process name is (`SpawnProcess-1`, ...)."""
    return multiprocessing.parent_process() is not None or multiprocessing.current_process().name != "MainProcess"


def configure_at_import():
    """Applies `ROVERLOG_THREADS`, or one thread in a `multiprocessing` child."""
    env = os.environ.get(ENV, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{ENV}={quoted(env)}: a number of threads, at least 1")
        set_threads(n)
    elif _in_child():
        _roverlog._mark_worker()
