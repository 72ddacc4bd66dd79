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

--workload rig --stream S --manifest M writes one sensor of the red-rover rig from the frames
`roverlog bench --only rig` made (M is their rig.json): one process per sensor, as roverc
runs. With --upstream it writes through upstream roverd's own channels (`import roverd` must
work: `roverd.sensors.DynamicSensor`, each channel's `consume(queue, thread=True)`, lzmaf at
preset 0 with roverc's batch of 12 compressed by a ThreadPool, video through OpenCV's MJPG
VideoWriter, which encodes the raw frames itself). Without it, a stdlib imitation of those
writers: per-channel threads, lzmaf frames compressed with stdlib lzma at preset 0 in
batches of 12 by a ThreadPool, the camera's JPEG frames appended as they are (no OpenCV, so
no encoding). It prints "ready", waits for a line on stdin, then sends the stream's samples
as fast as the writers take them, joins them, fsyncs every file, and prints one JSON line
(samples, seconds, cpu_seconds: this process's user + system time over those seconds).
"""

import argparse
import json
import lzma
import os
import queue
import resource
import shutil
import sys
import tempfile
import threading
import time
from multiprocessing.pool import ThreadPool

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


# roverc's LidarCapture: lzmaf frames compressed `batch` at a time in a ThreadPool.
RIG_LZMAF_BATCH = 12


def rig_stdlib_writer(q: "queue.Queue", path: str, fmt: str) -> None:
    """One channel as roverc's writers store it, without roverd: raw arrays appended, lzmaf
    frames compressed in batches by a ThreadPool with their offset index, JPEG frames
    appended (roverd's video channel would encode raw frames with OpenCV instead)."""
    with open(path, "wb") as f:
        if fmt != "lzmaf":
            while (item := q.get()) is not None:
                f.write(item if isinstance(item, bytes) else item.tobytes())
            return
        with open(path + "_i", "wb") as index:
            tail = 0
            index.write(tail.to_bytes(8, "little"))
            done = False
            while not done:
                batch = []
                while len(batch) < RIG_LZMAF_BATCH:
                    item = q.get()
                    if item is None:
                        done = True
                        break
                    batch.append(item)
                if not batch:
                    break
                with ThreadPool(processes=len(batch)) as p:
                    packed = p.map(lambda a: lzma.compress(a.data, preset=0), batch)
                for x in packed:
                    f.write(x)
                    tail += len(x)
                    index.write(tail.to_bytes(8, "little"))


def rig(args: argparse.Namespace) -> None:
    with open(args.manifest) as f:
        manifest = json.load(f)
    base = os.path.dirname(os.path.abspath(args.manifest))
    entry = manifest["streams"][args.stream]
    hz, channels = entry["hz"], entry["channels"]
    samples = max(1, round(args.seconds * hz))

    def load(ch: dict, k: int):
        if ch["format"] == "mjpg":
            if args.upstream:  # roverd's video channel takes pixels and encodes them
                path = os.path.join(base, entry["pixels"][k])
                return np.fromfile(path, dtype="u1").reshape(ch["shape"])
            with open(os.path.join(base, ch["files"][k]), "rb") as f:
                return f.read()
        path = os.path.join(base, ch["files"][k])
        return np.fromfile(path, dtype="<" + ch["type"]).reshape(ch["shape"])

    pool = [[load(ch, k) for ch in channels] for k in range(entry["pool"])]
    out = os.path.join(args.dir, entry["sensor"])
    queues = {name: queue.Queue() for name in ["ts", *(ch["name"] for ch in channels)]}
    if args.upstream:
        from roverd.sensors import DynamicSensor

        sensor = DynamicSensor(path=out, create=True)
        sensor.create("ts", {"format": "raw", "type": "f8", "shape": (),
                             "description": "Timestamp, in seconds."}).consume(
            queues["ts"], thread=True)
        for ch in channels:
            c = sensor.create(ch["name"], {k: ch[k] for k in ("format", "type", "shape", "desc")})
            q = queues[ch["name"]]
            if ch["format"] == "lzmaf":
                c.consume(q, thread=True, preset=0, batch=RIG_LZMAF_BATCH)
            elif ch["format"] == "mjpg":
                c.consume(q, thread=True, fps=hz)
            else:
                c.consume(q, thread=True)
    else:
        os.makedirs(out)
        formats = {"ts": "raw", **{ch["name"]: ch["format"] for ch in channels}}
        for name, q in queues.items():
            threading.Thread(target=rig_stdlib_writer,
                             args=(q, os.path.join(out, name), formats[name])).start()
    for name in entry["sidecars"]:
        shutil.copy(os.path.join(base, entry["sensor"], name), os.path.join(out, name))

    print("ready", flush=True)
    sys.stdin.readline()
    r0, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    names = [ch["name"] for ch in channels]
    for i in range(samples):
        queues["ts"].put(np.array(args.t0 + i / hz, dtype=np.float64))
        for name, a in zip(names, pool[i % len(pool)]):
            queues[name].put(a)
    for q in queues.values():
        q.put(None)
    main = threading.main_thread()
    while rest := [t for t in threading.enumerate() if t is not main and not t.daemon]:
        for t in rest:
            t.join()
    for root, _, files in os.walk(out):  # what the daemon's final durability request does
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    elapsed = time.perf_counter() - start
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(json.dumps({"sensor": entry["sensor"], "samples": samples, "seconds": elapsed,
                      "cpu_seconds": cpu, "upstream": bool(args.upstream)}), flush=True)


WORKLOADS = {
    # roverc's imu: rot, acc, avel, each f4 [3]
    "imu": {"rot": ("<f4", (3,)), "acc": ("<f4", (3,)), "avel": ("<f4", (3,))},
    # one large raw frame per sample (size set by --bytes)
    "large": None,
    # one sensor of the red-rover rig (--stream, --manifest): see the module's doc
    "rig": None,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, help="directory to write in (a temp dir inside)")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="imu")
    p.add_argument("--samples", type=int, help="default: 1000000 imu, 128 large")
    p.add_argument("--bytes", type=int, default=4 << 20, help="large: bytes per frame")
    p.add_argument("--fsync", action="store_true", help="fsync every file at the end")
    p.add_argument("--stream", help="rig: camera, lidar, radar or imu")
    p.add_argument("--manifest", help="rig: the rig.json of the frames to write")
    p.add_argument("--seconds", type=float, default=60.0, help="rig: rig seconds to write")
    p.add_argument("--t0", type=float, default=1.7e9, help="rig: the first timestamp")
    p.add_argument("--upstream", action="store_true",
                   help="rig: write through upstream roverd's channels (import roverd)")
    args = p.parse_args()
    if args.workload == "rig":
        if not (args.stream and args.manifest):
            p.error("--workload rig needs --stream and --manifest")
        os.makedirs(args.dir, exist_ok=True)
        rig(args)
        return

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
