#!/usr/bin/env python3
"""A random-sampling DataLoader-style loop over the red-rover rig's one-hour trace, ours
(`roverlog.redrover` with `roverlog.Nearest`) against upstream `roverd` (with
`abstract_dataloader.generic.Nearest`): the same loop code, each side in its own interpreter.

    .venv/bin/python python/benches/dataloader.py [--upstream-python /tmp/v/bin/python] \\
        [--trace DIR] [--workers 1,2] [--samples 2000] [--quick]

Without `--trace` the hour trace is written first by `roverlog bench --only hour-trace`
(ROVERLOG_BIN, default target/release/roverlog; `--quick`: two minutes of the rig). The
upstream Python (default $ROVERLOG_UPSTREAM_PYTHON) needs `import roverd` (red-rover's
`format/` package, with opencv-python-headless and abstract-dataloader); without one only ours
runs. roverd is not on PyPI, so this comparison is by hand, never in CI.

The loop, as a training script over the drive would run it:
- `Trace.from_config(trace, sync=Nearest("lidar", tol=0.1), sensors=...)` with three
  `DynamicSensor`s: the camera's `video.avi` (`mjpg`), the lidar's `rng` (`lzmaf`), the IMU's
  `rot`, `acc`, `avel` (`raw`), each at the sample nearest the lidar frame;
- a fixed random permutation of all of the drive's samples (seed 0), the first `--samples`;
- `--workers` processes forked after the trace is opened (as `torch.utils.data.DataLoader`'s
  workers on Linux; torch is not among the project's Python peers), fed batches of
  `--batch` indices in order, each batch's samples `trace[i]` pickled back to the parent
  (as DataLoader's result queue), which checks each sample and sums the lidar and IMU
  values: the two sides' sums must be equal (the same frames were read).

Reported per side, best of `--rounds` alternating rounds: samples per second through the
loop (pool start included, as `iter(DataLoader)` starts its workers), CPU seconds per sample
(the parent's and its workers', which a shared machine's load does not inflate as it does
wall time), and the first-sample latency in a fresh interpreter (`Trace.from_config` and the
first `trace[i]`; imports not counted, reported apart). Then the ratios ours/upstream.
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Channels read per sensor, and the reference the others are synchronised to.
SUBSETS = {"camera": ["video.avi"], "lidar": ["rng"], "imu": ["rot", "acc", "avel"]}
REFERENCE, TOL = "lidar", 0.1

# The trace, opened in the parent before the workers fork (they inherit it).
TRACE = None


def open_trace(impl, path):
    """The loop's trace: `impl` is "ours" or "upstream" (each imported only on its side)."""
    if impl == "ours":
        from roverlog import Nearest
        from roverlog.redrover import Trace
        from roverlog.redrover.sensors import DynamicSensor
    elif impl == "upstream":
        from abstract_dataloader.generic import Nearest
        from roverd import Trace
        from roverd.sensors import DynamicSensor
    else:
        raise ValueError(f"impl must be 'ours' or 'upstream', not {impl!r}")

    def sensor(keys):
        return lambda p: DynamicSensor(p, subset=keys)

    return Trace.from_config(path, sync=Nearest(REFERENCE, tol=TOL),
                             sensors={k: sensor(v) for k, v in SUBSETS.items()})


def indices(n, samples, seed=0):
    """The first `samples` of a fixed random permutation of `range(n)`."""
    return np.random.default_rng(seed).permutation(n)[:samples].tolist()


def fetch(batch):
    """A worker's job: one batch of samples (as a DataLoader worker's `dataset[i]` calls)."""
    return [TRACE[i] for i in batch]


def digest(sample):
    """Checks one sample's shape and returns (lidar sum, IMU sum): the same on both sides
    when they read the same frames (the camera's pixels differ by decoder and upstream's
    video seek, so only its shape is checked)."""
    cam, lidar, imu = sample["camera"]["video.avi"], sample["lidar"]["rng"], sample["imu"]
    assert cam.ndim == 4 and cam.shape[0] == 1 and cam.shape[-1] == 3 and cam.dtype == np.uint8, cam.shape
    assert lidar.ndim == 3 and lidar.shape[0] == 1 and lidar.dtype == np.uint16, (lidar.shape, lidar.dtype)
    return int(lidar.sum(dtype=np.uint64)), sum(float(imu[k].astype(np.float64).sum()) for k in SUBSETS["imu"])


def cpu_seconds():
    """CPU seconds of this process and of its children waited for (the workers, once joined)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def loop(idx, workers, batch, timeout=600):
    """The DataLoader-style loop over `TRACE`: returns (seconds, CPU seconds of the parent
    and its workers, lidar sum, IMU sum). A batch not back within `timeout` seconds (a
    worker died) is an error, not a hang."""
    batches = [idx[i:i + batch] for i in range(0, len(idx), batch)]
    lidar, imu, n = 0, 0.0, 0
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    if workers == 0:
        results = map(fetch, batches)
        pool = None
    else:
        pool = multiprocessing.get_context("fork").Pool(workers)
        # Every worker kept busy, batches yielded in order (as DataLoader's, whose workers
        # keep prefetch_factor batches in flight).
        it = pool.imap(fetch, batches)

        def bounded():
            for k in range(len(batches)):
                try:
                    yield it.next(timeout=timeout)
                except multiprocessing.TimeoutError:
                    raise TimeoutError(f"batch {k} of {len(batches)} not back from the {workers} workers "
                                       f"within {timeout} s") from None
        results = bounded()
    try:
        for samples in results:
            for s in samples:
                a, b = digest(s)
                lidar += a
                imu += b
                n += 1
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    t = time.perf_counter() - t0
    assert n == len(idx), (n, len(idx))
    return t, cpu_seconds() - c0, lidar, imu


def side(impl, path, workers, samples, batch, seed=0):
    """One side in this interpreter: open the trace, read the first sample, run the loop."""
    global TRACE
    t0 = time.perf_counter()
    trace = open_trace(impl, path)
    n = len(trace)
    t_open = time.perf_counter() - t0
    idx = indices(n, samples, seed)
    t0 = time.perf_counter()
    digest(trace[idx[0]])
    t_first = time.perf_counter() - t0
    TRACE = trace
    t, cpu, lidar, imu = loop(idx, workers, batch)
    return {"impl": impl, "len": n, "samples": len(idx), "open_s": t_open, "first_s": t_first,
            "loop_s": t, "per_s": len(idx) / t, "cpu_per_sample_s": cpu / len(idx),
            "lidar_sum": lidar, "imu_sum": imu}


def run_side(python, impl, path, workers, samples, batch):
    """`side` in a fresh interpreter (`python`), with its import time; returns its dict."""
    code = ("import sys, time, json\nt0 = time.perf_counter()\nsys.path.insert(0, sys.argv[1])\nimport dataloader as d\n"
            "if sys.argv[2] == 'ours':\n    import roverlog.redrover\nelse:\n    import roverd, abstract_dataloader.generic\n"
            "imp = time.perf_counter() - t0\n"
            "r = d.side(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))\n"
            "r['import_s'] = imp\nprint(json.dumps(r))")
    out = subprocess.run([python, "-c", code, HERE, impl, path, str(workers), str(samples), str(batch)],
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"the {impl} side ({python}) failed with exit {out.returncode}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_hour_trace(work, quick):
    binary = os.environ.get("ROVERLOG_BIN", os.path.join(ROOT, "target", "release", "roverlog"))
    cmd = [binary, "bench", "--only", "hour-trace", "--dir", work] + (["--quick"] if quick else [])
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, timeout=3600).stdout.strip()


def counts(text):
    """`--workers`: comma-separated counts, each 0 or more."""
    try:
        v = [int(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not comma-separated worker counts: {text!r}") from None
    if any(w < 0 for w in v):
        raise argparse.ArgumentTypeError(f"a worker count is at least 0: {text!r}")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", help="the rig trace to sample (default: write the hour trace first)")
    ap.add_argument("--dir", default=None, help="where to write it (default: a temporary directory, removed)")
    ap.add_argument("--quick", action="store_true", help="two minutes of the rig, few samples (a smoke run)")
    ap.add_argument("--upstream-python", default=os.environ.get("ROVERLOG_UPSTREAM_PYTHON"),
                    help="a Python where `import roverd` works (default: $ROVERLOG_UPSTREAM_PYTHON)")
    ap.add_argument("--workers", default=[1, 2], type=counts,
                    help="worker counts to run, comma-separated (default 1,2; 0: in the loop's process)")
    ap.add_argument("--samples", type=int, default=None, help="samples per loop (default 2000; 200 with --quick)")
    ap.add_argument("--batch", type=int, default=16, help="samples per batch a worker returns")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds, best of")
    a = ap.parse_args()
    samples = a.samples or (200 if a.quick else 2000)
    workers = a.workers
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        trace = a.trace or make_hour_trace(tmp, a.quick)
        sides = [("ours", sys.executable)] + ([("upstream", a.upstream_python)] if a.upstream_python else [])
        print(f"trace {trace}; {samples} random samples, batches of {a.batch}, best of {a.rounds}; "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for w in workers:
            best = {}
            for _ in range(a.rounds):
                for impl, py in sides:
                    r = run_side(py, impl, trace, w, samples, a.batch)
                    b = best.setdefault(impl, r)
                    for k in ("per_s",):
                        b[k] = max(b[k], r[k])
                    for k in ("open_s", "first_s", "import_s", "cpu_per_sample_s"):
                        b[k] = min(b[k], r[k])
            o = best["ours"]
            line = (f"DataLoader loop, {w} worker{'s' if w != 1 else ''}, {o['len']} samples in the trace: "
                    f"ours {o['per_s']:8.1f} samples/s, {o['cpu_per_sample_s'] * 1e3:.2f} CPU ms/sample (open {o['open_s'] * 1e3:.1f} ms + first {o['first_s'] * 1e3:.1f} ms, "
                    f"import {o['import_s'] * 1e3:.0f} ms)")
            if "upstream" in best:
                u = best["upstream"]
                assert (u["len"], u["lidar_sum"]) == (o["len"], o["lidar_sum"]), f"the sides read different lidar frames: {u} vs {o}"
                assert u["imu_sum"] == o["imu_sum"], f"the sides read different IMU samples: {u} vs {o}"
                line += (f"\n{'':<40}upstream {u['per_s']:8.1f} samples/s, {u['cpu_per_sample_s'] * 1e3:.2f} CPU ms/sample (open {u['open_s'] * 1e3:.1f} ms + first "
                         f"{u['first_s'] * 1e3:.1f} ms, import {u['import_s'] * 1e3:.0f} ms)"
                         f"\n{'':<40}ours/upstream {o['per_s'] / u['per_s']:.2f}x samples/s, "
                         + (f"{u['cpu_per_sample_s'] / o['cpu_per_sample_s']:.2f}x less CPU per sample, " if o['cpu_per_sample_s'] > 0
                            else "CPU too small to measure (10 ms ticks: more --samples), ")
                         + "first-sample latency "
                         f"{(u['open_s'] + u['first_s']) / (o['open_s'] + o['first_s']):.2f}x shorter")
            print(line, flush=True)
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
