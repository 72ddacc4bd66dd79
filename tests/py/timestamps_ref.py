"""Upstream roverd's timestamp models written from their definitions (../shared/UPSTREAM.md)
with numpy, as the reference for tests/interop/timestamps.rs.

    timestamps_ref.py IN.f8 SMOOTH_INTERVAL DISCRETIZE_INTERVAL EPS

reads little-endian float64 timestamps and writes IN.f8.smooth and IN.f8.discretize, the same
(binary: exact to the bit).
"""
import sys

import numpy as np


def blocks(x, interval):
    blocksize = int(interval * len(x) / (x[-1] - x[0]))
    return [(i, min(i + blocksize, len(x))) for i in range(0, len(x), blocksize)]


def smooth(x, interval):
    return np.concatenate([np.linspace(x[a], x[b - 1], b - a) for a, b in blocks(x, interval)])


def discretize(x, interval, eps):
    d = np.diff(x)
    step = np.median(d)
    counts = np.where(d / step > 1.5 + eps, np.round(d / step), 1)
    out = []
    for a, b in blocks(x, interval):
        c = counts[a:b - 1]
        steps = np.concatenate([[0], np.cumsum(c)])
        out.append(x[a] + steps * (x[b - 1] - x[a]) / np.sum(c) if len(c) else x[a:b])
    return np.concatenate(out)


if __name__ == "__main__":
    x = np.fromfile(sys.argv[1], dtype="<f8")
    s, di, eps = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    smooth(x, s).astype("<f8").tofile(sys.argv[1] + ".smooth")
    discretize(x, di, eps).astype("<f8").tofile(sys.argv[1] + ".discretize")
