#!/usr/bin/env python3
"""Writing with roverlog.redrover against upstream red-rover `roverd`, by hand (not CI:
roverd is not on PyPI; install it as `compare_roverd.py` says). For every channel class,
the same samples are written by both (`write` and `consume`), each file is read back by
the other library and compared (bytes where the format is deterministic: `raw`, `lzmaf`,
the decompressed `lzma`, `npz`), and the writing times are printed as ours/upstream ratios
(best of `--repeat` runs, same machine, same run).

    /tmp/v/bin/python python/benches/write_roverd.py [--scale 1.0] [--repeat 3]

Exits 1 if any file differs or does not read back.
"""
import argparse
import lzma
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import roverd as up
from roverlog.redrover import channels as ours

FAILURES = []


def note(what, ok, detail=""):
    print(("ok   " if ok else "DIFF ") + what + (f": {detail}" if detail else ""))
    if not ok:
        FAILURES.append(what)


def cases(scale):
    rng = np.random.default_rng(0)
    n = max(4, int(200 * scale))
    y, x = np.mgrid[0:240, 0:320]
    frames = np.stack([np.stack([(x + i) % 256, (y * 2 + i) % 256, (x + y) % 256], -1) for i in range(n // 2)]).astype(np.uint8)
    radar = rng.integers(-2000, 2000, (n, 64, 8, 2, 64), dtype=np.int16)  # 128 KiB samples
    depth = (np.sin(np.arange(n * 64 * 1024) / 500.0) * 20000 + 25000).astype(np.uint16).reshape(n, 64, 1024)
    return [
        ("RawChannel", "raw radar", radar, {}),
        ("LzmaChannel", "lzma depth", depth, {}),
        ("LzmaFrameChannel", "lzmaf depth", depth, {}),
        ("VideoChannel", "mjpg 320x240", frames, {}),
        ("NPZBlobChannel", "npz", depth[: n // 4].astype(np.float32), {}),
        ("JPEGBlobChannel", "jpg 320x240", frames, {}),
    ]


def best(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def files_of(path):
    if os.path.isdir(path):
        return {f: open(os.path.join(path, f), "rb").read() for f in sorted(os.listdir(path))}
    out = {"": open(path, "rb").read()}
    if os.path.exists(path + "_i"):
        out["_i"] = open(path + "_i", "rb").read()
    return out


def compare_files(what, cls, a, b):
    fa, fb = files_of(a), files_of(b)
    if cls == "LzmaChannel":
        note(what + " decompressed bytes", lzma.decompress(fa[""]) == lzma.decompress(fb[""]))
    elif cls in ("VideoChannel", "JPEGBlobChannel"):
        note(what + " file count", list(fa) == list(fb), f"{len(fa)} vs {len(fb)}")
    else:
        note(what + " bytes", fa == fb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="write_roverd.")
    try:
        for cls, label, data, kw in cases(args.scale):
            ext = ".avi" if cls == "VideoChannel" else ""
            paths = {who: os.path.join(tmp, f"{who}_{cls}{ext}") for who in ("ours", "up")}
            mods = {"ours": ours, "up": up.channels}

            def open_(who, path=None):
                return getattr(mods[who], cls)(path or paths[who], dtype=data.dtype, shape=data.shape[1:], **kw)

            def write(who):
                p = paths[who]
                if os.path.isdir(p):
                    shutil.rmtree(p)
                open_(who).write(data)

            t = {who: best(lambda w=who: write(w), args.repeat) for who in ("up", "ours")}
            mb = data.nbytes / 1e6
            print(f"     {label}: write {mb:.0f} MB: upstream {mb / t['up']:.0f} MB/s, ours {mb / t['ours']:.0f} MB/s, "
                  f"ours/upstream time {t['ours'] / t['up']:.2f}")
            compare_files(f"{label} write()", cls, paths["ours"], paths["up"])
            # Each reads what the other wrote.
            for writer, reader in (("ours", "up"), ("up", "ours")):
                got = open_(reader, paths[writer]).read()
                if cls in ("VideoChannel", "JPEGBlobChannel"):
                    d = np.abs(got.astype(np.int16) - data.astype(np.int16))
                    note(f"{label}: {reader} reads {writer}'s", got.shape == data.shape and d.mean() < 3,
                         f"shape {got.shape}, mean diff {d.mean():.2f}")
                else:
                    note(f"{label}: {reader} reads {writer}'s", np.array_equal(got, data))
            # consume() of single samples, as upstream's test does.
            for who in ("ours", "up"):
                p = paths[who] + ".c" + ext
                items = iter(data) if cls in ("VideoChannel", "NPZBlobChannel", "JPEGBlobChannel") else (s[None] for s in data)
                open_(who, p).consume(items)
            compare_files(f"{label} consume()", cls, paths["ours"] + ".c" + ext, paths["up"] + ".c" + ext)
    finally:
        shutil.rmtree(tmp)
    print(f"{len(FAILURES)} difference(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
