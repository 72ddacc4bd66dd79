#!/usr/bin/env python3
"""Baseline: the upstream roverc collector's way of writing a sensor, measured.

roverc (RadarML/red-rover, collect/) runs one writer thread per channel, each draining an
unbounded queue.Queue of numpy arrays into a buffered file with `f.write(a.tobytes())`; the
capture loop puts `np.array(time.time())` into the `ts` queue and the data into the others.
It never fsyncs. This script reproduces that shape (not its code) with a producer that runs
as fast as it can, so the figure is the ceiling of that design on this machine:

    samples/s = samples / (time from the first put until every writer has closed its file)

    scripts/py-env.sh   # prints the venv's python (numpy)
    .venv/bin/python scripts/bench/python_writer.py --dir target/bench-tmp --workload imu
    .venv/bin/python scripts/bench/python_writer.py --dir target/bench-tmp --workload large

--fsync adds one os.fsync per file at the end (what the daemon's final durability request
costs), so the two can be compared like for like. Prints one human line and one JSON line.
"""

import argparse
import json
import os
import queue
import shutil
import tempfile
import threading
import time

import numpy as np


def writer(q: "queue.Queue", path: str, fsync: bool, stats: dict) -> None:
    """One channel: drain the queue into a buffered file until the None sentinel."""
    n = 0
    with open(path, "wb") as f:  # default buffering, as upstream
        while True:
            item = q.get()
            if item is None:
                break
            f.write(item.tobytes())
            n += 1
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    stats[path] = n


def run(directory: str, channels: dict, samples: int, fsync: bool) -> dict:
    """channels: name -> (dtype, shape). Returns the measurement."""
    queues = {name: queue.Queue() for name in ["ts", *channels]}
    stats: dict = {}
    threads = [
        threading.Thread(target=writer, args=(q, os.path.join(directory, name), fsync, stats))
        for name, q in queues.items()
    ]
    for t in threads:
        t.start()
    # One array per channel, made once: the producer models a driver handing over frames,
    # not the cost of producing them. A fresh array per sample, as a device read gives,
    # would only make the baseline slower.
    data = {name: np.ones(shape, dtype=dtype) for name, (dtype, shape) in channels.items()}
    max_q = 0
    start = time.perf_counter()
    for i in range(samples):
        queues["ts"].put(np.array(time.time(), dtype=np.float64))
        for name, a in data.items():
            queues[name].put(a)
        if i % 1024 == 0:
            max_q = max(max_q, max(q.qsize() for q in queues.values()))
    produced = time.perf_counter() - start
    for q in queues.values():
        q.put(None)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    per_sample = 8 + sum(a.nbytes for a in data.values())
    assert all(n == samples for n in stats.values()), stats
    return {
        "samples": samples,
        "bytes": samples * per_sample,
        "seconds": elapsed,
        "producer_seconds": produced,
        "samples_per_s": samples / elapsed,
        "mb_per_s": samples * per_sample / 1e6 / elapsed,
        "max_queue": max_q,
        "fsync": fsync,
    }


WORKLOADS = {
    # roverc's imu: rot, acc, avel, each f4 [3]
    "imu": {"rot": ("<f4", (3,)), "acc": ("<f4", (3,)), "avel": ("<f4", (3,))},
    # one large raw frame per sample (size set by --bytes)
    "large": None,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, help="directory to write in (a temp dir inside)")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="imu")
    p.add_argument("--samples", type=int, help="default: 1000000 imu, 128 large")
    p.add_argument("--bytes", type=int, default=4 << 20, help="large: bytes per frame")
    p.add_argument("--fsync", action="store_true", help="fsync every file at the end")
    args = p.parse_args()

    channels = WORKLOADS[args.workload] or {"data": ("u1", (args.bytes,))}
    samples = args.samples or (1_000_000 if args.workload == "imu" else 128)
    os.makedirs(args.dir, exist_ok=True)
    directory = tempfile.mkdtemp(prefix="pywriter.", dir=args.dir)
    try:
        r = run(directory, channels, samples, args.fsync)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    r["workload"] = args.workload
    name = f"python writer {args.workload}{' +fsync' if args.fsync else ''}"
    print(f"{name:<34} {r['mb_per_s']:>10.1f} MB/s {r['samples_per_s']:>12.0f} samples/s"
          f"  ({r['bytes']} bytes, {r['samples']} samples, {r['seconds']:.3f} s,"
          f" max queue {r['max_queue']})")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
