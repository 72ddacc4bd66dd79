"""Benchmark peer for benches/gulp_read.rs.

usage: gulp_bench.py create DIR VIDEOS FRAMES CHUNKS WIDTH HEIGHT
       gulp_bench.py read DIR REPEATS

create: writes VIDEOS videos of FRAMES WIDTHxHEIGHT RGB JPEG frames with gulpio2 (GulpChunk.append,
        simplejpeg), spread over CHUNKS chunks; prints {"seconds", "bytes"} as JSON.
read:   reads every frame's raw JPEG bytes with gulpio2 (GulpDirectory with an identity
        jpeg_decoder, so nothing is decoded), both through gd[id] (which reopens the chunk
        file per id) and through GulpChunk.iter_all (one open per chunk); prints the best of
        REPEATS runs of each, plus the time to construct GulpDirectory, as JSON.
"""
import json
import os
import sys
import time

import numpy as np
from gulpio2.fileio import GulpDirectory


def create(out_dir, videos, frames, chunks, w, h):
    t0 = time.perf_counter()
    y, x = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(0)
    # Blocky texture: realistic ~55 KB frames at quality 90, quick to encode.
    texture = rng.integers(0, 40, size=(h // 16 + 1, w // 16 + 1, 3)).repeat(16, 0).repeat(16, 1)[:h, :w]
    # A few distinct frames, reused: encoding dominates, not making pixels.
    base = []
    for i in range(frames):
        img = np.stack([(x + 3 * i) % 256, (y + 5 * i) % 256, (x + y + 7 * i) % 256], axis=-1)
        base.append(((img + texture) % 256).astype(np.uint8))
    gd = GulpDirectory(out_dir)
    per_chunk = (videos + chunks - 1) // chunks
    v = 0
    for chunk in gd.new_chunks(chunks):
        with chunk.open("wb"):
            for _ in range(per_chunk):
                if v == videos:
                    break
                chunk.append(str(v) if v % 2 else "video%05d" % v, {"n": frames, "v": v}, base)
                v += 1
    seconds = time.perf_counter() - t0

    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir) if f.endswith(".gulp"))
    print(json.dumps({"seconds": seconds, "bytes": total}))


def read(out_dir, repeats):
    best_open = best_getitem = best_iter = float("inf")
    frames = total = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        gd = GulpDirectory(out_dir, jpeg_decoder=lambda b: b)
        t1 = time.perf_counter()
        frames = total = 0
        for chunk in gd.chunks():
            for id_ in chunk.meta_dict:
                fs, _meta = gd[id_]
                frames += len(fs)
                total += sum(len(f) for f in fs)
        t2 = time.perf_counter()
        n2 = 0
        for chunk in gd.chunks():
            for fs, _meta in chunk.iter_all():
                n2 += sum(len(f) for f in fs)
        t3 = time.perf_counter()
        assert n2 == total
        best_open = min(best_open, t1 - t0)
        best_getitem = min(best_getitem, t2 - t1)
        best_iter = min(best_iter, t3 - t2)
    print(json.dumps({"open": best_open, "getitem": best_getitem, "iter_all": best_iter,
                      "frames": frames, "bytes": total}))


if sys.argv[1] == "create":
    create(*sys.argv[2:3], *map(int, sys.argv[3:8]))
else:
    read(sys.argv[2], int(sys.argv[3]))
