#!/usr/bin/env python3
"""Per-trace, per-sensor summaries of a fleet's traces, computed on a Dask cluster.

    python3 examples/fleet_summary.py /data/fleet                  # a LocalCluster on this machine
    python3 examples/fleet_summary.py /data/fleet --workers 8
    python3 examples/fleet_summary.py /data/fleet --scheduler tcp://10.0.0.5:8786   # a real cluster
    python3 examples/fleet_summary.py /data/fleet --json
    python3 examples/fleet_summary.py s3://bucket/fleet            # in place, AWS_* variables

Every trace below the directory (a directory holding `config.yaml`, as `roverlog list`
finds them) becomes one task; a worker opens it with `roverlog` (which must be installed in
the workers' environment: `pip install ./python`) and returns one row per sensor: samples,
first and last time, duration, mean rate, and from `_roverlog/events.jsonl` the samples the
daemon dropped and the gaps its drivers' sequence numbers showed. `--local` computes the same
rows in this process, without Dask.
"""
import argparse
import json
import os
import sys

import roverlog


def find_traces(root):
    if root.startswith("s3://"):
        # Object storage (the `AWS_*` variables say where): one listing.
        from roverlog.remote import find_traces

        return find_traces(root)
    out = []
    for d, _, files in os.walk(root):
        if "config.yaml" in files:
            out.append(d)
    return sorted(out)


def events(trace, opened=None):
    if trace.startswith("s3://"):
        data = opened.read_file("_roverlog/events.jsonl")
        lines = data.decode("utf-8").splitlines() if data is not None else []
        return [json.loads(line) for line in lines if line.strip()]
    path = os.path.join(trace, "_roverlog", "events.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _relative(trace, root):
    if not root:
        return trace
    if trace.startswith("s3://"):
        return trace[len(root.rstrip("/")):].lstrip("/") or "."
    return os.path.relpath(trace, root)


def summarize(trace, root=""):
    """One row per sensor of the trace at `trace`."""
    t = roverlog.Trace(trace)
    ev = events(trace, t)
    rows = []
    for name, s in t.sensors.items():
        ts = s.timestamps
        n = len(ts)
        first, last = (float(ts[0]), float(ts[-1])) if n else (None, None)
        duration = last - first if n else 0.0
        rows.append({
            "trace": _relative(trace, root),
            "sensor": name,
            "samples": n,
            "first": first,
            "last": last,
            "duration": duration,
            "rate": (n - 1) / duration if n > 1 and duration > 0 else None,
            "dropped": sum(e.get("count", 0) for e in ev if e.get("event") == "drop" and e.get("sensor") == name),
            "gaps": sum(1 for e in ev if e.get("event") == "gap" and e.get("sensor") == name),
            "missing": sum(e.get("missing", 0) for e in ev if e.get("event") == "gap" and e.get("sensor") == name),
        })
    return rows


def summarize_all(root, client=None):
    """Rows of every trace below `root`, sorted; on `client` (a dask.distributed Client)
    when given, else in this process."""
    traces = find_traces(root)
    if client is None:
        parts = [summarize(t, root) for t in traces]
    else:
        parts = client.gather(client.map(summarize, traces, root=root, pure=False))
    return sorted((r for p in parts for r in p), key=lambda r: (r["trace"], r["sensor"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--scheduler", help="address of a running Dask scheduler (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument("--local", action="store_true", help="no Dask: compute in this process")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args(argv)
    if not a.root.startswith("s3://") and not os.path.isdir(a.root):
        sys.exit(f"{a.root}: not a directory")
    if a.local:
        rows = summarize_all(a.root)
    else:
        from dask.distributed import Client, LocalCluster

        if a.scheduler:
            with Client(a.scheduler) as client:
                rows = summarize_all(a.root, client)
        else:
            with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                rows = summarize_all(a.root, client)
    if a.json:
        print(json.dumps(rows))
        return
    print(f"{'trace':<40} {'sensor':<12} {'samples':>9} {'seconds':>9} {'Hz':>8} {'dropped':>8} {'gaps':>5}")
    for r in rows:
        rate = f"{r['rate']:.2f}" if r["rate"] is not None else "-"
        print(f"{r['trace']:<40} {r['sensor']:<12} {r['samples']:>9} {r['duration']:>9.2f} {rate:>8} "
              f"{r['dropped']:>8} {r['gaps']:>5}")


if __name__ == "__main__":
    main()
