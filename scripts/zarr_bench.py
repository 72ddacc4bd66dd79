"""Peer side of benches/zarr_read.rs.

Usage: zarr_bench.py write DIR ROWS   -> writes DIR/agents (L5Kit agents dtype, Blosc lz4
                                          clevel 5 byte shuffle, chunks 10000) and DIR/starts.txt
       zarr_bench.py time DIR REPEATS -> times zarr-python on the same reads, prints JSON
"""
import json
import sys
import time

import numcodecs
import numpy as np
import zarr

AGENT = [
    ("centroid", "<f8", (2,)),
    ("extent", "<f4", (3,)),
    ("yaw", "<f4"),
    ("velocity", "<f4", (2,)),
    ("track_id", "<u8"),
    ("label_probabilities", "<f4", (17,)),
]
SLICES, SLICE_ROWS = 1000, 100


def write(d, rows):
    rng = np.random.default_rng(2020)
    a = np.zeros(rows, dtype=AGENT)
    # Roughly L5Kit-like: smooth positions, small extents, one-hot-ish label probabilities.
    a["centroid"] = np.cumsum(rng.normal(0, 0.5, (rows, 2)), axis=0) + [-800.0, 1200.0]
    a["extent"] = rng.uniform(0.5, 5, (rows, 3)).astype("<f4")
    a["yaw"] = rng.uniform(-3.14, 3.14, rows).astype("<f4")
    a["velocity"] = rng.normal(0, 3, (rows, 2)).astype("<f4")
    a["track_id"] = rng.integers(1, 2000, rows)
    a["label_probabilities"][np.arange(rows), rng.integers(0, 17, rows)] = 1.0
    z = zarr.open(f"{d}/agents", mode="w", shape=(rows,), chunks=(10000,), dtype=AGENT,
                  compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1))
    z[:] = a
    starts = rng.integers(0, rows - SLICE_ROWS, SLICES)
    with open(f"{d}/starts.txt", "w") as f:
        f.write("\n".join(str(s) for s in starts))


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def timing(d, repeats):
    z = zarr.open(f"{d}/agents", mode="r")
    starts = [int(s) for s in open(f"{d}/starts.txt").read().split()]

    def slices():
        for s in starts:
            z[s:s + SLICE_ROWS]

    print(json.dumps({
        "whole_s": best(lambda: z[:], repeats),
        "slices_s": best(slices, max(1, repeats // 2)),
        "nthreads": numcodecs.blosc.get_nthreads(),
    }))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    else:
        timing(sys.argv[2], int(sys.argv[3]))
