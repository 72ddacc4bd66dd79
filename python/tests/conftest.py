"""Traces written the way upstream writes them (numpy `tofile`, `lzma.compress` per sample at
preset 0 with a `_i` offset file, one `lzma.open` file, `jpg` files from OpenCV's encoder,
`np.savez` blobs, an MJPEG AVI from OpenCV's `VideoWriter`), for the readers to be checked
against numpy reading them by upstream's rules."""
import glob
import json
import lzma
import os
import sys

import cv2
import numpy as np
import pytest

# The suite tests this checkout's `roverlog`, and says so or stops:
# - an editable install (`maturin develop` in `python/`) builds the extension into
#   `python/roverlog/`: the sources there are the package, put first on sys.path;
# - otherwise `python/` holds the sources without the extension, and is taken off sys.path
#   (`python -m pytest` run there puts it first, hiding the installed package), and the
#   installed package (`pip install ./python`) must be this checkout's: its Python files the
#   same as `python/roverlog/`'s, or the suite stops naming the first that differs (a copy
#   installed from another checkout, or before the sources changed).
# `ROVERLOG_TEST_PACKAGE=installed` (what `cargo test --test python` sets, having just
# installed the wheel) takes the installed package even beside an editable build.
_SOURCES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = os.path.join(_SOURCES, "roverlog")
_EDITABLE = os.environ.get("ROVERLOG_TEST_PACKAGE") != "installed" and bool(
    glob.glob(os.path.join(_PACKAGE, "_roverlog*.so"))
)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _SOURCES]
if _EDITABLE:
    sys.path.insert(0, _SOURCES)
try:
    import roverlog  # noqa: F401  (imported here to fail once, with the remedy)
except ImportError as e:
    raise pytest.UsageError(f"roverlog is not installed ({e}): run `pip install ./python` from the repository root") from None


def _python_files(top):
    """The package's `.py` files below `top`, as paths relative to it."""
    return {
        os.path.relpath(os.path.join(d, f), top)
        for d, dirs, files in os.walk(top)
        if "__pycache__" not in d
        for f in files
        if f.endswith(".py")
    }


def _not_this_checkout(imported):
    """Why the package imported from `imported` is not `python/roverlog/` (None when it is)."""
    if os.path.realpath(imported) == os.path.realpath(_PACKAGE):
        return None
    if _EDITABLE:
        return f"the extension was built into {_PACKAGE} (an editable install), but roverlog was imported from {imported}"
    ours, theirs = _python_files(_PACKAGE), _python_files(imported)
    for rel in sorted(ours ^ theirs):
        return f"{rel} is in {_PACKAGE if rel in ours else imported} only"
    for rel in sorted(ours):
        with open(os.path.join(_PACKAGE, rel), "rb") as a, open(os.path.join(imported, rel), "rb") as b:
            if a.read() != b.read():
                return f"{rel} differs from {os.path.join(_PACKAGE, rel)}"
    return None


_why = _not_this_checkout(os.path.dirname(os.path.abspath(roverlog.__file__)))
if _why is not None:
    raise pytest.UsageError(
        f"the roverlog imported ({os.path.dirname(roverlog.__file__)}) is not this checkout's: {_why}; "
        f"reinstall it (`pip install ./python` from {os.path.dirname(_SOURCES)}, or `maturin develop` in {_SOURCES})"
    )


def pytest_configure(config):
    # A file left open (by the package or a test) fails the test that opened it, as it does
    # under `python -W error -m pytest`: the ResourceWarning becomes an unraisable
    # exception, which pytest reports as a warning made an error here.
    config.addinivalue_line("filterwarnings", "error::ResourceWarning")
    config.addinivalue_line("filterwarnings", "error::pytest.PytestUnraisableExceptionWarning")


N = 23
T0 = 1.7e9


@pytest.fixture(params=["zune", "turbo"])
def each_jpeg_decoder(request):
    """Runs a JPEG test once on each decoder (`roverlog.jpeg`): zune-jpeg, and libjpeg-turbo,
    which must load here (scripts/test installs libturbojpeg0; `set_jpeg_decoder("turbo")`
    raises an `OSError` naming it otherwise). Then back to `auto`."""
    roverlog.set_jpeg_decoder(request.param)
    assert roverlog.jpeg_decoder() == request.param
    yield request.param
    roverlog.set_jpeg_decoder("auto")


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


def write_channel(path, fmt, typ, data, rate=10.0):
    """One channel written the way upstream writes `fmt`; a `jpg` channel's JPEG bytes back."""
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
        return enc
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
    else:
        raise ValueError(fmt)
    return None


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
            enc = write_channel(os.path.join(d, cname), fmt, typ, data, rate)
            if enc is not None:
                truth[name][cname + ".jpeg"] = enc
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


def jittered(rng, start, rate, seconds, jitter, drop=0.0):
    """Receive times of a sensor at `rate`: independent jitter, and a share `drop` of frames
    lost (so gaps of whole periods, as a lidar's)."""
    n = int(seconds * rate)
    t = start + np.arange(n) / rate
    if drop:
        t = t[rng.random(n) >= drop]
    return t + rng.uniform(0, jitter, len(t))


# The parts of an Ouster `lidar.json` (the SDK's sensor metadata) that destaggering and
# point clouds read, for a 4-beam, 16-column lidar.
OUSTER_METADATA = {
    "lidar_data_format": {"pixels_per_column": 4, "columns_per_frame": 16, "pixel_shift_by_row": [6, 2, 0, -2]},
    "beam_intrinsics": {
        "beam_altitude_angles": [15.0, 5.2, -5.1, -14.9],
        "beam_azimuth_angles": [3.1, -1.0, 1.2, -3.0],
        "beam_to_lidar_transform": [1, 0, 0, 15.8, 0, 1, 0, 0, 0, 0, 1, 2.0, 0, 0, 0, 1],
    },
    "lidar_intrinsics": {"lidar_to_sensor_transform": [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1]},
}


def os1_128_metadata(beams=128, columns=2048):
    """An OS1-128's `lidar.json` in ouster-sdk's layout (keys the projection does not read
    too): altitudes over +-22.5 degrees, the azimuth offsets and stagger of four beam columns,
    the beam origin 15.8 mm off the axis, the sensor frame flipped about z and lifted."""
    alt = [22.5 - 45.0 * (b / (beams - 1)) ** 1.05 for b in range(beams)]
    az = [[4.23, 1.41, -1.41, -4.23][b % 4] + 0.01 * (b // 4) for b in range(beams)]
    return {
        "sensor_info": {"prod_line": "OS-1-128", "prod_sn": "992109000000", "build_rev": "v2.3.0"},
        "config_params": {"lidar_mode": f"{columns}x10"},
        "lidar_data_format": {
            "pixels_per_column": beams, "columns_per_frame": columns,
            "pixel_shift_by_row": [[72, 24, -24, -72][b % 4] for b in range(beams)],
            "column_window": [0, columns - 1], "udp_profile_lidar": "RNG19_RFL8_SIG16_NIR16",
        },
        "beam_intrinsics": {
            "beam_altitude_angles": alt, "beam_azimuth_angles": az,
            "beam_to_lidar_transform": [1, 0, 0, 15.806, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
            "lidar_origin_to_beam_origin_mm": 15.806,
        },
        "lidar_intrinsics": {"lidar_to_sensor_transform": [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1]},
    }


def depth_frames(frames, beams=128, columns=2048, seed=0):
    """`(frames, beams, columns)` uint16 ranges (mm): a smooth scene (2-40 m) with 9% of the
    pixels no return and 1% under 0.5 m."""
    rng = np.random.default_rng(seed)
    c = np.arange(columns)[None, None, :]
    b = np.arange(beams)[None, :, None]
    f = np.arange(frames)[:, None, None]
    wave = (np.sin(c / 97.0 + f * 0.1) + 1.0) * 9000.0
    out = (2000.0 + wave + b * 120.0 + rng.integers(0, 1000, (frames, beams, columns))).astype(np.uint16)
    u = rng.random(out.shape)
    out[u < 0.09] = 0
    near = (u >= 0.09) & (u < 0.10)
    out[near] = rng.integers(100, 400, near.sum())
    return out


def write_rover(root, seed=0, seconds=40.0):
    """A trace as red-rover records it, for the typed sensors: radar (`radar.json`), an
    Ouster lidar with dropped frames (`lidar.json`), an MJPEG camera, a `jpg` camera, camera
    semantic segmentation (`_camera`), an IMU whose `avel` lost its last sample in a power
    cut, and poses (`_radar/pose.npz`). Sensors start and stop at different times. Returns
    what was written, per sensor and channel."""
    rng = np.random.default_rng(seed)
    os.makedirs(root)
    with open(os.path.join(root, "config.yaml"), "w") as f:
        f.write("radar: {}\nlidar: {}\n")
    truth = {}

    def sensor(name, ts, chans, extra=None):
        d = os.path.join(root, name)
        os.makedirs(d)
        ts.astype("<f8").tofile(os.path.join(d, "ts"))
        meta = {"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"}}
        truth[name] = {"ts": ts}
        for cname, fmt, typ, data in chans:
            meta[cname] = {"format": fmt, "type": typ, "shape": list(data.shape[1:]), "desc": cname}
            write_channel(os.path.join(d, cname), fmt, typ, data, 10.0)
            truth[name][cname] = data
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
        for fname, content in (extra or {}).items():
            with open(os.path.join(d, fname), "w") as f:
                json.dump(content, f)

    t = jittered(rng, T0 + 0.37, 20.0, seconds - 1.0, 0.004)
    sensor("radar", t, [
        ("iq", "raw", "i2", pattern(11, len(t), (4, 2, 3, 8), np.int16)),
        ("valid", "raw", "u1", (rng.random(len(t)) > 0.1).astype(np.uint8)),
    ], {"radar.json": {"range_resolution": 0.044, "doppler_resolution": 0.12}})
    t = jittered(rng, T0, 10.0, seconds, 0.002, drop=0.05)
    ranges = pattern(12, len(t), (4, 16), np.uint16)
    ranges[:, 1, ::5] = 0  # no return
    sensor("lidar", t, [
        ("rng", "lzmaf", "u2", ranges),
        ("rfl", "lzmaf", "u1", pattern(13, len(t), (4, 16), np.uint8)),
        ("nir", "lzma", "u2", pattern(14, len(t), (4, 16), np.uint16)),
    ], {"lidar.json": OUSTER_METADATA})
    t = jittered(rng, T0 + 0.05, 5.0, seconds, 0.01)
    sensor("camera", t, [("video.avi", "mjpg", "u1", images(len(t), 24, 32))])
    t = jittered(rng, T0 + 0.11, 2.0, seconds, 0.01)
    sensor("jpgcam", t, [("image", "jpg", "u1", images(len(t), 24, 32))])
    t = jittered(rng, T0 + 0.2, 2.0, seconds - 2.0, 0.01)
    sensor("_camera", t, [("segment", "npz", "u1", pattern(15, len(t), (24, 32), np.uint8) % 8)])
    t = jittered(rng, T0 + 0.01, 100.0, seconds, 0.001)
    sensor("imu", t, [
        ("acc", "raw", "f4", pattern(16, len(t), (3,), np.float32)),
        ("rot", "raw", "f4", pattern(17, len(t), (3,), np.float32)),
        ("avel", "raw", "f4", pattern(18, len(t) - 1, (3,), np.float32)),
    ])
    pose_t = truth["radar"]["ts"][5:-5]
    os.makedirs(os.path.join(root, "_radar"))
    pose = {
        "pos": pattern(21, len(pose_t), (3,), np.float64),
        "vel": pattern(22, len(pose_t), (3,), np.float64),
        "acc": pattern(23, len(pose_t), (3,), np.float64),
        "rot": pattern(24, len(pose_t), (3, 3), np.float64),
        "t": pose_t,
    }
    np.savez(os.path.join(root, "_radar", "pose.npz"), **pose)
    truth["pose"] = pose
    return truth


@pytest.fixture
def rover(tmp_path):
    root = str(tmp_path / "rover")
    return root, write_rover(root)


def opencv_frames(path):
    """The JPEG frames of a `jpg` directory or an MJPEG video decoded by libjpeg (OpenCV's
    `imdecode`), RGB. The video's frames are cut out by roverlog's reader (`decode=False`; that
    they are the AVI's frames is tested in test_roverd.py): OpenCV's `VideoCapture` converts
    YUV to RGB its own way, a few levels from libjpeg's."""
    if os.path.isdir(path):
        blobs = []
        for f in sorted(os.listdir(path)):
            with open(os.path.join(path, f), "rb") as b:
                blobs.append(b.read())
    else:
        import roverlog

        d, name = os.path.split(path)
        blobs = roverlog.Sensor(d).channels[name].read(decode=False)
    return np.stack([cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)[..., ::-1] for b in blobs])
