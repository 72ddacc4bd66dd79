"""Reads a roverd trace the way the upstream Python `roverd` reader does (meta.json, `ts`
length = size // 8, raw via numpy.memmap with the declared shape, lzmaf via the `_i` offsets
and lzma, jpg/npz by listing the channel directory) and prints, as JSON, per sensor the
sample count and per channel the sha256 of all decoded samples back to back.
"""
import hashlib
import json
import lzma
import os
import sys

import numpy as np


def read_sensor(d):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    n = os.path.getsize(os.path.join(d, "ts")) // 8
    out = {"samples": n, "channels": {}}
    for name, spec in meta.items():
        fmt, typ = spec["format"], "<" + spec["type"]
        shape = tuple(spec["shape"])
        path = os.path.join(d, name)
        h = hashlib.sha256()
        if fmt == "raw":
            arr = np.memmap(path, dtype=typ, mode="r", shape=(n, *shape)) if n else np.zeros((0, *shape), typ)
            h.update(arr.tobytes())
        elif fmt == "lzmaf":
            off = np.fromfile(path + "_i", dtype="<u8")
            with open(path, "rb") as f:
                data = f.read()
            for i in range(n):
                frame = np.frombuffer(lzma.decompress(data[off[i]:off[i + 1]]), dtype=typ).reshape(shape)
                h.update(frame.tobytes())
        elif fmt in ("jpg", "npz"):
            files = sorted(os.listdir(path))
            assert len(files) == n, (path, len(files), n)
            for i, fn in enumerate(files):
                assert fn == "%06d.%s" % (i, fmt), fn
                with open(os.path.join(path, fn), "rb") as f:
                    h.update(f.read())
        else:
            continue
        out["channels"][name] = h.hexdigest()
    return out


def main(root):
    assert os.path.exists(os.path.join(root, "config.yaml")), "upstream finds traces by config.yaml"
    sensors = {}
    for s in sorted(os.listdir(root)):
        d = os.path.join(root, s)
        if s.startswith("_") or not os.path.isfile(os.path.join(d, "meta.json")):
            continue
        sensors[s] = read_sensor(d)
    print(json.dumps(sensors))


if __name__ == "__main__":
    main(sys.argv[1])
