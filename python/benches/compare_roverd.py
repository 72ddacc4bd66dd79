#!/usr/bin/env python3
"""roverlog.redrover against upstream red-rover `roverd`, by hand (not CI: roverd is not on
PyPI). Install upstream yourself into a venv that also has roverlog, e.g.

    git -C <red-rover checkout> archive HEAD format | tar -x -C /tmp/up
    python -m venv /tmp/v && /tmp/v/bin/pip install /tmp/up/format opencv-python-headless pytest
    CARGO_TARGET_DIR=target/python /tmp/v/bin/pip install ./python
    /tmp/v/bin/python python/benches/compare_roverd.py [TRACE ...]

Writes the test suite's traces (`python/tests/conftest.py`: every channel format, every typed
sensor, sensors of different spans) into a temporary directory, adds the TRACE directories
given, and compares on each: `Trace.find_sensors`, `Trace.from_config` untyped (every
synchronised sample, every channel) and typed (every typed sensor, corrections `None` and
`"auto"`, past/future windows), `indices`, `len`, `filesize`, `datarate`, `split`,
`Dataset.find_traces`/`from_config`/global indexing, the timestamp corrections,
`transforms.ouster` (`Destagger`, `PointCloud`), and
`roverlog.Nearest` against `generic.Nearest` with margins. Prints one line per comparison
and the differences found; exits 1 if any.

Writing is compared by `write_roverd.py` (same install): every channel class's `write` and
`consume`, each library reading the other's files, and the writing speed. Upstream's own
channel tests and roverp run on ours through `roverd_alias/roverd.py`, a module named
`roverd` that is `roverlog.redrover` and its submodules (see BENCHMARKS.md, issue 36).
"""
import argparse
import os
import sys
import tempfile
import warnings

import numpy as np
from abstract_dataloader import generic

import roverd as up
from roverlog import Nearest as OurNearest
from roverlog import redrover as ours

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

FAILURES = []
# Decoders differ by a few levels per pixel (libjpeg-turbo in OpenCV vs zune-jpeg).
JPEG_MEAN, JPEG_MAX = 1.5, 48


def note(what, ok, detail=""):
    print(("ok   " if ok else "DIFF ") + what + (f": {detail}" if detail else ""))
    if not ok:
        FAILURES.append(what)


def same_array(what, a, b, jpeg=False):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        note(what, False, f"shape/dtype {a.shape} {a.dtype} vs upstream {b.shape} {b.dtype}")
        return False
    if jpeg:
        d = np.abs(a.astype(np.int16) - b.astype(np.int16))
        ok = d.size == 0 or (d.mean() < JPEG_MEAN and d.max() <= JPEG_MAX)
        if not ok:
            note(what, False, f"pixels differ: mean {d.mean():.2f}, max {d.max()}")
        return ok
    if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
        note(what, False, f"values differ at {np.argwhere(a != b)[:3].tolist()}")
        return False
    return True


def same_sample(what, a, b, jpeg_keys=("image", "img")):
    """A sample: a dict (of sensors, or of a DynamicSensor's arrays) or a types dataclass."""
    if isinstance(b, dict):
        if list(a) != list(b):
            note(what, False, f"keys {list(a)} vs upstream {list(b)}")
            return False
        return all([
            same_sample(f"{what}/{k}", a[k], b[k], jpeg_keys) if isinstance(b[k], dict) or hasattr(b[k], "__dataclass_fields__")
            else same_array(f"{what}/{k}", a[k], b[k], k in jpeg_keys)
            for k in b
        ])
    if type(a).__name__ != type(b).__name__:
        note(what, False, f"type {type(a).__name__} vs upstream {type(b).__name__}")
        return False
    ok = True
    for f in b.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(y, str):
            ok &= x == y
            if x != y:
                note(f"{what}.{f}", False, f"{x!r} vs {y!r}")
        else:
            ok &= same_array(f"{what}.{f}", x, y, f in ("image",))
    return ok


def compare_traces(t_ours, t_up, what, jpeg_keys=("image", "img"), every=1):
    note(f"{what}: len", len(t_ours) == len(t_up), f"{len(t_ours)} vs {len(t_up)}")
    if t_up.indices is not None:
        note(f"{what}: indices keys", list(t_ours.indices) == list(t_up.indices))
        for k in t_up.indices:
            same_array(f"{what}: indices[{k}]", t_ours.indices[k], t_up.indices[k])
    ok = True
    for i in range(0, len(t_up), every):
        ok &= same_sample(f"{what}[{i}]", t_ours[i], t_up[i], jpeg_keys)
    note(f"{what}: every {'' if every == 1 else f'{every}th '}sample ({len(range(0, len(t_up), every))})", ok)


def video_frames(t_ours, t_up, sensor, key, what):
    """Upstream decodes video with OpenCV's VideoCapture, whose YUV -> RGB differs from
    libjpeg's by itself; ours counts as equal when no further from it than libjpeg decoding
    the same JPEG frames (+0.5 mean, as python/tests/test_roverd.py). And upstream's
    `read(i, 1)` seeks to `i - 1`: record which frame each side gives."""
    import cv2
    import roverlog

    ch_o, ch_u = t_ours[sensor].channels[key], t_up[sensor].channels[key]
    n = len(t_up[sensor])
    ours_all, up_all = ch_o.read(0, -1), ch_u.read(0, -1)
    jpegs = roverlog.Sensor(os.path.dirname(ch_o.path)).channels[key].read(decode=False)
    libjpeg = np.stack([cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)[..., ::-1] for b in jpegs])

    def dist(a, b):
        return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())

    d_ours, d_lib = dist(ours_all, up_all), dist(libjpeg, up_all)
    note(f"{what}: {key} read whole ({n} frames), ours vs upstream no further than libjpeg vs upstream",
         ours_all.shape == up_all.shape and d_ours <= d_lib + 0.5, f"mean |ours - upstream| {d_ours:.2f}, |libjpeg - upstream| {d_lib:.2f}")
    which, ok = [], True
    for i in (0, 1, 2, n // 2, n - 1):
        u = ch_u.read(i, 1)[0]
        d = [dist(u, ours_all[j]) for j in range(max(0, i - 2), min(n, i + 3))]
        which.append((i, max(0, i - 2) + int(np.argmin(d))))
        ok &= dist(ch_o.read(max(i - 1, 0), 1)[0], u) <= dist(libjpeg[max(i - 1, 0)], u) + 0.5
    print(f"     {what}: upstream {key}.read(i, 1) gives frame: {', '.join(f'{i}->{j}' for i, j in which)}; ours gives frame i")
    note(f"{what}: upstream {key}.read(i, 1) equals our read(max(i - 1, 0), 1)", ok)


def compare_timestamps(truth_ts):
    for name, x in truth_ts.items():
        for interval in (3.0, 10.0, 30.0):
            same_array(f"timestamps.smooth({name}, {interval})", ours.timestamps.smooth(x, interval), up.timestamps.smooth(x, interval))
            same_array(f"timestamps.discretize({name}, {interval})", ours.timestamps.discretize(x, interval), up.timestamps.discretize(x, interval))
    note("timestamps.smooth/discretize bit-equal", not any("timestamps" in f for f in FAILURES))


def compare_nearest(ts):
    n = 0
    for margin in ({}, (2, 3), (0.5, 1.25), {next(iter(ts)): (1, 0.2)}):
        for tol in (0.1, 0.01, np.inf):
            for ref in ts:
                a = OurNearest(ref, margin=margin, tol=tol)(ts)
                b = generic.Nearest(ref, margin=margin, tol=tol)(ts)
                for k in b:
                    same_array(f"Nearest({ref}, {margin}, {tol})[{k}]", a[k], b[k])
                n += 1
    note(f"roverlog.Nearest == generic.Nearest ({n} cases)", not any("Nearest(" in f for f in FAILURES))


def compare_rover(root, truth):
    what = os.path.basename(root)
    note(f"{what}: find_sensors", sorted(ours.Trace.find_sensors(root)) == sorted(up.Trace.find_sensors(root)))
    note(f"{what}: find_sensors(virtual)", sorted(ours.Trace.find_sensors(root, True)) == sorted(up.Trace.find_sensors(root, True)))
    for ref, tol in (("lidar", 0.1), ("radar", 0.05), ("camera", 0.2)):
        sync = generic.Nearest(ref, tol=tol)
        a = ours.Trace.from_config(root, sync=sync)
        b = up.Trace.from_config(root, sync=sync)
        # The mjpg channel: frame i vs upstream's frame i - 1 (seek); compared apart below.
        subset = {k: [c for c in b[k].channels if c != "video.avi"] for k in b.sensors}
        for t in (a, b):
            for k, s in t.sensors.items():
                s.subset = subset[k]
        compare_traces(a, b, f"{what}: untyped Nearest({ref}, tol={tol}), video.avi left out", jpeg_keys=("image",))
        note(f"{what}: filesize {a.filesize}", a.filesize == b.filesize, f"upstream {b.filesize}")
        note(f"{what}: datarate", np.isclose(a.datarate, b.datarate, rtol=1e-12), f"{a.datarate} vs {b.datarate}")
        for s, e in ((0.0, 0.5), (0.3, 0.9)):
            compare_traces(ours.split(a, s, e), up.split(b, s, e), f"{what}: split({s}, {e})", every=7)
    a = ours.Trace.from_config(root)
    b = up.Trace.from_config(root)
    video_frames(a, b, "camera", "video.avi", what)
    for correction in (None, "auto"):
        kinds_o = {
            "radar": lambda p: ours.sensors.XWRRadar(p, correction=correction, past=1, future=1),
            "lidar": lambda p: ours.sensors.OSLidar(p, correction=correction),
            "jpgcam": lambda p: ours.sensors.Camera(p, key="image", correction=correction),
            "_camera": lambda p: ours.sensors.Semseg(p, correction=correction),
            "imu": lambda p: ours.sensors.IMU(p, correction=correction, past=2),
            "pose": lambda p: ours.sensors.Pose(p),
        }
        kinds_u = {
            "radar": lambda p: up.sensors.XWRRadar(p, correction=correction, past=1, future=1),
            "lidar": lambda p: up.sensors.OSLidar(p, correction=correction),
            "jpgcam": lambda p: up.sensors.Camera(p, key="image", correction=correction, resolution=None),
            "_camera": lambda p: up.sensors.Semseg(p, correction=correction),
            "imu": lambda p: up.sensors.IMU(p, correction=correction, past=2),
            "pose": lambda p: up.sensors.Pose(p),
        }
        for ref in ("radar", "lidar"):
            sync = generic.Nearest(ref, tol=0.1, margin=(3, 3))
            try:
                b = up.Trace.from_config(root, sync=sync, sensors=kinds_u)
            except TypeError as e:
                # Upstream's Camera hands resolution/interp to any channel; its JPEG channel
                # takes neither. Compare the jpg camera as a DynamicSensor-free typed read.
                note(f"{what}: upstream Camera on a jpg channel", True, f"upstream raises {e}; left out")
                kinds_u.pop("jpgcam")
                kinds_o.pop("jpgcam")
                b = up.Trace.from_config(root, sync=sync, sensors=kinds_u)
            a = ours.Trace.from_config(root, sync=sync, sensors=kinds_o)
            compare_traces(a, b, f"{what}: typed, correction={correction}, Nearest({ref}, margin=(3, 3))")
    for key, cls in (("lidar", "OSLidarDepth"), ("camera", "Camera"), ("radar", "XWRRadar"), ("imu", "IMU")):
        for correction in (None, "auto"):
            a = getattr(ours.sensors, cls)(os.path.join(root, key), correction=correction)
            b = getattr(up.sensors, cls)(os.path.join(root, key), correction=correction)
            same_array(f"{what}: {cls}(correction={correction}).metadata.timestamps", a.metadata.timestamps, b.metadata.timestamps)
            note(f"{what}: len({cls})", len(a) == len(b), f"{len(a)} vs {len(b)}")
    from roverd.transforms import ouster as up_ouster
    from roverlog.redrover.transforms import ouster as our_ouster

    lo = ours.sensors.OSLidarDepth(os.path.join(root, "lidar"), past=1)
    lu = up.sensors.OSLidarDepth(os.path.join(root, "lidar"), past=1)
    ok = True
    for min_range in (None, 30.0):
        pc_o, pc_u = our_ouster.PointCloud(min_range), up_ouster.PointCloud(min_range)
        for i in range(1, len(lu), 5):
            a, b = lo[i], lu[i]
            ok &= same_sample(f"{what}: Destagger(lidar[{i}])", our_ouster.Destagger()(a), up_ouster.Destagger()(b))
            x, y = pc_o(a), pc_u(b)
            ok &= same_array(f"{what}: PointCloud({min_range})(lidar[{i}]).length", x.length, y.length)
            ok &= same_array(f"{what}: PointCloud({min_range})(lidar[{i}]).timestamps", x.timestamps, y.timestamps)
            close = x.xyz.shape == y.xyz.shape and np.allclose(x.xyz, y.xyz, rtol=0, atol=2e-5)
            if not close:
                note(f"{what}: PointCloud({min_range})(lidar[{i}]).xyz", False, f"{x.xyz.shape} vs {y.xyz.shape}")
            ok &= close
    note(f"{what}: transforms.ouster Destagger equal, PointCloud lengths equal and points within 2e-5 m ({len(range(1, len(lu), 5))} frames x 2)", ok)
    cam_o, cam_u = ours.sensors.Camera(os.path.join(root, "camera")), up.sensors.Camera(os.path.join(root, "camera"))
    same_sample(f"{what}: Camera[0]", cam_o[0], cam_u[0])
    small_o = ours.sensors.Camera(os.path.join(root, "camera"), resolution=(16, 12))
    small_u = up.sensors.Camera(os.path.join(root, "camera"), resolution=(16, 12))
    same_sample(f"{what}: Camera(resolution=(16, 12))[0]", small_o[0], small_u[0])
    compare_timestamps({f"{what}/{k}": truth[k]["ts"] for k in ("radar", "lidar", "imu", "camera")})
    compare_nearest({k: truth[k]["ts"] for k in ("radar", "lidar", "imu", "camera")})


def compare_any(root):
    """A trace given on the command line: untyped, every sensor, synchronised to each."""
    what = os.path.basename(os.path.normpath(root))
    names = up.Trace.find_sensors(root)
    for ref in names:
        sync = generic.Nearest(ref, tol=0.1)
        a, b = ours.Trace.from_config(root, sync=sync), up.Trace.from_config(root, sync=sync)
        compare_traces(a, b, f"{what}: Nearest({ref})", every=max(1, len(b) // 50))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="*", help="more trace directories to compare on")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from conftest import write_rover, write_trace

    with tempfile.TemporaryDirectory() as tmp:
        roots = [os.path.join(tmp, "set", "rover0"), os.path.join(tmp, "set", "more", "rover1")]
        truths = [write_rover(r, seed=i, seconds=40.0 - 15 * i) for i, r in enumerate(roots)]
        for r, t in zip(roots, truths):
            compare_rover(r, t)
        flat = os.path.join(tmp, "set", "formats")
        truth = write_trace(flat)
        sync = generic.Nearest("lidar", tol=0.02)
        a, b = ours.Trace.from_config(flat, sync=sync), up.Trace.from_config(flat, sync=sync)
        for t in (a, b):
            t["video"].subset = []
        compare_traces(a, b, "formats: every format (mjpg apart)", jpeg_keys=("img",))
        video_frames(a, b, "video", "video.avi", "formats")
        found_o = ours.Dataset.find_traces(os.path.join(tmp, "set"))
        found_u = up.Dataset.find_traces(os.path.join(tmp, "set"))
        note("Dataset.find_traces", sorted(found_o) == sorted(found_u), f"{found_o} vs {found_u}")
        roots = sorted(set(found_u) - {flat})
        sync = generic.Nearest("lidar", tol=0.1)
        kinds_o = {"radar": ours.sensors.XWRRadar, "lidar": ours.sensors.OSLidar}
        kinds_u = {"radar": up.sensors.XWRRadar, "lidar": up.sensors.OSLidar}
        da = ours.Dataset.from_config(roots, sync=sync, sensors=kinds_o, workers=-1)
        db = up.Dataset.from_config(roots, sync=sync, sensors=kinds_u)
        note("Dataset len", len(da) == len(db), f"{len(da)} vs {len(db)}")
        note("Dataset repr", repr(da) == repr(db), f"{da!r} vs {db!r}")
        ok = all([same_sample(f"Dataset[{i}]", da[i], db[i]) for i in range(0, len(db), 3)])
        note(f"Dataset: every 3rd sample ({len(range(0, len(db), 3))})", ok)
        compare_traces(ours.split(da, 0.2, 0.7).traces[1], up.split(db, 0.2, 0.7).traces[1], "split(Dataset)")
    for root in args.traces:
        compare_any(root)
    print(f"\n{len(FAILURES)} differences" + ("" if not FAILURES else ": " + "; ".join(FAILURES[:20])))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
