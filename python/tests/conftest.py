"""Traces written the way upstream writes them (numpy `tofile`, `lzma.compress` per sample at
preset 0 with a `_i` offset file, one `lzma.open` file, `jpg` files from OpenCV's encoder,
`np.savez` blobs, an MJPEG AVI from OpenCV's `VideoWriter`), for the readers to be checked
against numpy reading them by upstream's rules."""
import json
import lzma
import os
import sys

import cv2
import numpy as np
import pytest

# The tests check the installed package. `python/` holds its sources without the native
# extension, and `python -m pytest` run there puts it first on sys.path, where its `roverlog`
# would hide the installed one ("No module named 'roverlog._roverlog'").
_SOURCES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _SOURCES]
try:
    import roverlog  # noqa: F401  (imported here to fail once, with the remedy)
except ImportError as e:
    raise pytest.UsageError(f"roverlog is not installed ({e}): run `pip install ./python` from the repository root") from None

N = 23
T0 = 1.7e9


def pattern(k, n, shape, dtype):
    rng = np.random.default_rng(k)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((n, *shape)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal((n, *shape)) + 1j * rng.standard_normal((n, *shape))).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, (n, *shape), endpoint=True, dtype=dtype)


def images(n, h=48, w=64):
    y, x = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        out[i, ..., 0] = (x * 4 + i * 9) % 256
        out[i, ..., 1] = (y * 5 + i * 3) % 256
        out[i, ..., 2] = ((x + y) * 2 + i) % 256
    return out


def write_trace(root, n=N):
    """A trace with every channel format; returns what was written, per sensor and channel."""
    os.makedirs(root)
    with open(os.path.join(root, "config.yaml"), "w") as f:
        f.write("imu: {}\n")
    truth = {}

    def sensor(name, rate, chans):
        d = os.path.join(root, name)
        os.makedirs(d)
        meta = {"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"}}
        ts = T0 + np.arange(n) / rate + 0.001 * (np.arange(n) % 3)
        ts.astype("<f8").tofile(os.path.join(d, "ts"))
        truth[name] = {"ts": ts}
        for cname, fmt, typ, shape, data in chans:
            meta[cname] = {"format": fmt, "type": typ, "shape": list(shape), "desc": ""}
            path = os.path.join(d, cname)
            if fmt == "raw":
                data.astype("<" + typ).tofile(path)
            elif fmt == "lzmaf":
                offsets = [0]
                with open(path, "wb") as f:
                    for s in data:
                        b = lzma.compress(s.astype("<" + typ).tobytes(), preset=0)
                        f.write(b)
                        offsets.append(offsets[-1] + len(b))
                np.array(offsets, dtype="<u8").tofile(path + "_i")
            elif fmt == "lzma":
                with lzma.open(path, "wb") as f:
                    f.write(data.astype("<" + typ).tobytes())
            elif fmt == "jpg":
                os.makedirs(path)
                enc = []
                for i, img in enumerate(data):
                    ok, b = cv2.imencode(".jpg", img[..., ::-1])
                    assert ok
                    with open(os.path.join(path, "%06d.jpg" % i), "wb") as f:
                        f.write(b.tobytes())
                    enc.append(b.tobytes())
                truth[name][cname + ".jpeg"] = enc
            elif fmt == "npz":
                os.makedirs(path)
                for i, a in enumerate(data):
                    np.savez(os.path.join(path, "%06d.npz" % i), data=a)
            elif fmt == "mjpg":
                h, w = data.shape[1:3]
                vw = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), rate, (w, h))
                for img in data:
                    vw.write(img[..., ::-1])
                vw.release()
            truth[name][cname] = data
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)

    sensor("imu", 100.0, [
        ("acc", "raw", "f4", (3,), pattern(1, n, (3,), np.float32)),
        ("rot", "raw", "f8", (3, 3), pattern(2, n, (3, 3), np.float64)),
        ("iq", "raw", "c8", (2, 2), pattern(3, n, (2, 2), np.complex64)),
        ("temp", "raw", "i2", (), pattern(4, n, (), np.int16)),
    ])
    sensor("lidar", 10.0, [
        ("rng", "lzmaf", "u2", (8, 16), pattern(5, n, (8, 16), np.uint16)),
        ("hist", "lzma", "u4", (5,), pattern(6, n, (5,), np.uint32)),
        ("pose", "npz", "f4", (4,), pattern(7, n, (4,), np.float32)),
    ])
    sensor("camera", 30.0, [("img", "jpg", "u1", (48, 64, 3), images(n))])
    sensor("video", 30.0, [("video.avi", "mjpg", "u1", (48, 64, 3), images(n))])
    return truth


@pytest.fixture
def trace(tmp_path):
    root = str(tmp_path / "trace")
    return root, write_trace(root)
