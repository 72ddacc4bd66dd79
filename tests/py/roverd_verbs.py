"""Upstream roverd's CLI verbs as ../shared/UPSTREAM.md states their rules, for
tests/cli/verbs.rs to compare ours with on the same traces. Prints JSON.

    roverd_verbs.py list ROOT [follow]            # os.walk: dirs holding config.yaml, relative
    roverd_verbs.py extract TRACE relative|epoch START END
                                                  # per sensor [i0, i1) = searchsorted(ts, ...)
    roverd_verbs.py checksum TRACE                # the `file,md5` CSV text
"""
import hashlib
import json
import os
import sys

import numpy as np


def list_traces(root, follow):
    out = []
    for d, _, files in os.walk(root, followlinks=follow):
        if "config.yaml" in files:
            out.append(os.path.relpath(d, root))
    return sorted(out)


def sensors(trace):
    for s in sorted(os.listdir(trace)):
        if not s.startswith("_") and os.path.isfile(os.path.join(trace, s, "meta.json")):
            yield s


def extract(trace, mode, start, end):
    ts = {s: np.fromfile(os.path.join(trace, s, "ts"), dtype="<f8") for s in sensors(trace)}
    t0 = max(t[0] for t in ts.values())
    t1 = min(t[-1] for t in ts.values())
    if mode == "relative":
        start, end = t0 + start * (t1 - t0), t0 + end * (t1 - t0)
    return {s: [int(i) for i in np.searchsorted(t, [start, end])] for s, t in ts.items()}


def checksum(trace):
    rows = []
    for d, _, files in os.walk(trace):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                rows.append((os.path.relpath(p, trace), hashlib.md5(fh.read()).hexdigest()))
    return "file,md5\n" + "".join(f"{f},{h}\n" for f, h in sorted(rows))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "list":
        out = list_traces(sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "follow")
    elif cmd == "extract":
        out = extract(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    elif cmd == "checksum":
        out = checksum(sys.argv[2])
    else:
        sys.exit(f"unknown command {cmd!r}")
    print(json.dumps(out))
