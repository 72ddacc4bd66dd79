"""The upstream side of the roverd interop test.

`write DIR`: writes a trace the way the upstream collector and numpy do (raw via
`ndarray.tofile`, `lzmaf` as one `lzma.compress` per sample at preset 0 plus a `<name>_i`
file of u8 offsets, `lzma` as one `lzma.open(..., "wb")` file, `jpg` as a directory of files).
`check DIR`: reads a trace our writer made, with `numpy.fromfile`, `numpy.memmap` and Python's
`lzma`, and compares every byte with the same deterministic pattern.

Sample bytes of channel k, sample i: byte j = (i*31 + j*7 + k*13) % 251.
"""
import json
import lzma
import os
import sys

import numpy as np

N = 9
CHANNELS = [
    # name, format, type, shape
    ("acc", "raw", "f4", [3]),
    ("rot", "raw", "f8", [3, 3]),
    ("temp", "raw", "i2", []),
    ("iq", "raw", "c8", [2, 2]),
    ("rng", "lzmaf", "u2", [8, 16]),
    ("nir", "lzmaf", "u1", [8, 16]),
    ("hist", "lzma", "u4", [5]),
    ("img", "jpg", "u1", []),
]


def pattern(k, i, n):
    j = np.arange(n, dtype=np.int64)
    return ((i * 31 + j * 7 + k * 13) % 251).astype(np.uint8).tobytes()


def sample_bytes(typ, shape):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype("<" + typ).itemsize


def blob_len(i):
    return 10 + (i * 37) % 300


def write(root):
    os.makedirs(os.path.join(root, "sensor"))
    with open(os.path.join(root, "config.yaml"), "w") as f:
        f.write("collector: numpy-peer\n")
    d = os.path.join(root, "sensor")
    meta = {"ts": {"format": "raw", "type": "f8", "shape": [], "description": "epoch time"}}
    ts = np.array([1700000000.0 + i * 0.05 for i in range(N)], dtype="<f8")
    ts.tofile(os.path.join(d, "ts"))
    for k, (name, fmt, typ, shape) in enumerate(CHANNELS):
        meta[name] = {"format": fmt, "type": typ, "shape": shape, "desc": name}
        path = os.path.join(d, name)
        size = sample_bytes(typ, shape)
        if fmt == "raw":
            data = b"".join(pattern(k, i, size) for i in range(N))
            np.frombuffer(data, dtype="<" + typ).tofile(path)
        elif fmt == "lzmaf":
            offsets = [0]
            with open(path, "wb") as f:
                for i in range(N):
                    frame = lzma.compress(pattern(k, i, size), preset=0)
                    f.write(frame)
                    offsets.append(offsets[-1] + len(frame))
            np.array(offsets, dtype="<u8").tofile(path + "_i")
        elif fmt == "lzma":
            with lzma.open(path, "wb") as f:
                for i in range(N):
                    f.write(pattern(k, i, size))
        elif fmt == "jpg":
            os.makedirs(path)
            for i in range(N):
                with open(os.path.join(path, "%06d.jpg" % i), "wb") as f:
                    f.write(pattern(k, i, blob_len(i)))
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f)


def check(root):
    d = os.path.join(root, "sensor")
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    assert meta["ts"] == {"format": "raw", "type": "f8", "shape": [], "desc": meta["ts"]["desc"]}, meta["ts"]
    n = os.path.getsize(os.path.join(d, "ts")) // 8
    assert n == N, n
    ts = np.memmap(os.path.join(d, "ts"), dtype="<f8", mode="r")
    assert np.array_equal(ts, np.array([1700000000.0 + i * 0.05 for i in range(N)])), ts
    checked = 0
    for k, (name, fmt, typ, shape) in enumerate(CHANNELS):
        if fmt == "lzma":
            continue  # not writable: we only read it
        assert meta[name]["format"] == fmt and meta[name]["type"] == typ, meta[name]
        assert meta[name]["shape"] == shape, meta[name]
        path = os.path.join(d, name)
        size = sample_bytes(typ, shape)
        want = [pattern(k, i, size if fmt != "jpg" else blob_len(i)) for i in range(N)]
        if fmt == "raw":
            arr = np.fromfile(path, dtype="<" + typ).reshape((N, *shape))
            mm = np.memmap(path, dtype="<" + typ, mode="r", shape=(N, *shape))
            for i in range(N):
                assert arr[i].tobytes() == want[i], (name, i)
                assert mm[i].tobytes() == want[i], (name, i)
        elif fmt == "lzmaf":
            off = np.fromfile(path + "_i", dtype="<u8")
            assert len(off) == N + 1 and off[0] == 0, off
            with open(path, "rb") as f:
                data = f.read()
            assert off[-1] == len(data)
            for i in range(N):
                frame = data[off[i]:off[i + 1]]
                assert lzma.decompress(frame, format=lzma.FORMAT_XZ) == want[i], (name, i)
                arr = np.frombuffer(lzma.decompress(frame), dtype="<" + typ).reshape(shape)
                assert arr.shape == tuple(shape)
        elif fmt == "jpg":
            files = sorted(os.listdir(path))
            assert files == ["%06d.jpg" % i for i in range(N)], files
            for i in range(N):
                with open(os.path.join(path, files[i]), "rb") as f:
                    assert f.read() == want[i], (name, i)
        checked += 1
    print("checked", checked, "channels of", N, "samples")


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
