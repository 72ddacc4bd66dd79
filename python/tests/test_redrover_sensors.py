"""roverlog.redrover's typed sensors, timestamp corrections and channels: sample types,
shapes and values against what was written, and the corrections against upstream's
documented formulas computed here (module docstring of `roverd.timestamps`)."""
import json
import os
import shutil

import cv2
import numpy as np
import optree
import pytest

import roverlog
from roverlog import redrover as roverd
from roverlog.redrover import sensors, types

from conftest import N, opencv_frames

S = sensors


def smooth_ref(x, interval=30.0):
    """Blocks of int(interval * n / span) samples, each evenly spaced from its first to its
    last timestamp."""
    n = len(x)
    bs = int(interval * n / (x[-1] - x[0]))
    out = []
    for a in range(0, n, bs):
        b = min(a + bs, n)
        out.append(np.linspace(x[a], x[b - 1], b - a))
    return np.concatenate(out)


def discretize_ref(x, interval=10.0, eps=0.05):
    """Each gap as a whole number of median periods (rounded where it exceeds 1.5 + eps
    periods, else 1); per block, the block's span shared out by those counts."""
    d = np.diff(x)
    step = np.median(d)
    k = [float(round(g / step)) if g / step > 1.5 + eps else 1.0 for g in d]
    n = len(x)
    bs = int(interval * n / (x[-1] - x[0]))
    out = np.empty(n)
    for a in range(0, n, bs):
        b = min(a + bs, n)
        counts = k[a:b - 1]
        unit = (x[b - 1] - x[a]) / sum(counts) if counts else 0.0
        acc = 0.0
        out[a] = x[a]
        for j, c in enumerate(counts, start=1):
            acc += c
            out[a + j] = x[a] + acc * unit
    return out


def close_ts(ours, want):
    # 1.7e9 s carries 2.4e-7 s per ulp: equal to the microsecond, far below any jitter.
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-6)


def close_px(ours, libjpeg):
    """JPEG pixels within the decoder tolerance the Rust tests use (libjpeg-turbo)."""
    d = np.abs(ours.astype(np.int16) - libjpeg.astype(np.int16))
    assert d.mean() < 1.0 and d.max() <= 40, (d.mean(), d.max())


def test_timestamp_corrections_follow_upstreams_formulas(rover):
    _, truth = rover
    rng = np.random.default_rng(3)
    for x in [truth["radar"]["ts"], truth["lidar"]["ts"], truth["imu"]["ts"]]:
        for interval in (3.0, 10.0, 30.0, 100.0):
            close_ts(roverd.timestamps.smooth(x, interval=interval), smooth_ref(x, interval))
            close_ts(roverd.timestamps.discretize(x, interval=interval), discretize_ref(x, interval))
    lidar = truth["lidar"]["ts"]
    assert np.any(np.diff(lidar) > 0.15)  # frames were dropped, and count as whole periods
    out = roverd.timestamps.discretize(lidar, eps=0.3)
    close_ts(out, discretize_ref(lidar, eps=0.3))
    assert roverd.timestamps.identity(lidar) is lidar
    x = 1.7e9 + np.cumsum(rng.uniform(0.09, 0.11, 1000))
    assert np.abs(roverd.timestamps.smooth(x) - x).max() > 1e-3  # it did something
    for bad in [np.array([1.0]), np.array([2.0, 2.0])]:
        with pytest.raises(ValueError, match="two increasing"):
            roverd.timestamps.smooth(bad)
    with pytest.raises(ValueError, match="interval"):
        roverd.timestamps.smooth(np.array([0.0, 100.0]), interval=1.0)
    # Core's own refusal (crates/core/src/timestamps.rs): no period to count gaps in, where
    # upstream's formula divides by zero.
    with pytest.raises(roverlog.FormatError, match="median difference"):
        roverd.timestamps.discretize(np.array([0.0, 0.0, 0.0, 5.0]), interval=10.0)
    # float64 values are core's, to the last bit, whichever way they are given.
    x = truth["radar"]["ts"]
    assert roverd.timestamps.smooth(list(x), interval=10.0).tobytes() == roverd.timestamps.smooth(x, interval=10.0).tobytes()


def test_radar_samples_and_metadata(rover):
    root, truth = rover
    path = os.path.join(root, "radar")
    r = S.XWRRadar(path)
    ts, iq, valid = truth["radar"]["ts"], truth["radar"]["iq"], truth["radar"]["valid"]
    assert len(r) == len(ts) and repr(r) == f"XWRRadar({path}: [ts, iq, valid])"
    np.testing.assert_array_equal(r.metadata.timestamps, ts)
    s = r[7]
    assert type(s) is types.XWRRadarIQ
    assert s.iq.shape == (1, 1, 4, 2, 3, 8) and s.iq.dtype == np.int16
    np.testing.assert_array_equal(s.iq[0, 0], iq[7])
    assert s.valid.shape == (1, 1) and s.valid.dtype == np.uint8 and s.valid[0, 0] == valid[7]
    assert s.timestamps.shape == (1, 1) and s.timestamps.dtype == np.float64 and s.timestamps[0, 0] == ts[7]
    assert s.range_resolution.dtype == np.float32 and s.range_resolution.shape == (1,)
    np.testing.assert_array_equal(s.range_resolution, np.float32([0.044]))
    np.testing.assert_array_equal(s.doppler_resolution, np.float32([0.12]))
    assert s.iq.flags.writeable  # the caller's array, as upstream's reads give
    leaves = optree.tree_leaves(s)  # a registered pytree, as upstream's types
    assert len(leaves) == 5
    auto = S.XWRRadar(path, correction="auto", past=2, future=1)
    close_ts(auto.metadata.timestamps, smooth_ref(ts, 30.0))
    w = auto[10]
    np.testing.assert_array_equal(w.iq[0], iq[8:12])
    np.testing.assert_array_equal(w.valid[0], valid[8:12])
    np.testing.assert_array_equal(w.timestamps[0], auto.metadata.timestamps[8:12])
    by_name = S.XWRRadar(path, correction="discretize")
    close_ts(by_name.metadata.timestamps, discretize_ref(ts))
    with pytest.raises(ValueError, match="unknown timestamp correction"):
        S.XWRRadar(path, correction="wobble")
    os.remove(os.path.join(path, "radar.json"))
    with pytest.warns(UserWarning, match="radar.json"):
        none = S.XWRRadar(path)
    assert none.metadata.range_resolution[0] == 0
    with open(os.path.join(path, "radar.json"), "w") as f:
        json.dump({"range_resolution": 1.0}, f)
    with pytest.raises(KeyError, match="radar.json"):
        S.XWRRadar(path)


def test_lidar_samples_and_metadata(rover):
    root, truth = rover
    path = os.path.join(root, "lidar")
    ts = truth["lidar"]["ts"]
    d = S.OSLidarDepth(path, correction="auto")
    close_ts(d.metadata.timestamps, discretize_ref(ts, 10.0, 0.05))
    assert d.metadata.intrinsics == os.path.join(path, "lidar.json")
    s = d[3]
    assert type(s) is types.OSDepth and s.rng.shape == (1, 1, 4, 16) and s.rng.dtype == np.uint16
    np.testing.assert_array_equal(s.rng[0, 0], truth["lidar"]["rng"][3])
    assert s.intrinsics == d.metadata.intrinsics and s.timestamps[0, 0] == d.metadata.timestamps[3]
    frames = list(S.OSLidarDepth(path).stream())
    assert len(frames) == len(ts)
    np.testing.assert_array_equal(frames[-1].rng[0, 0], truth["lidar"]["rng"][-1])
    assert frames[-1].timestamps[0, 0] == ts[-1]
    full = S.OSLidar(path, past=1)
    s = full[5]
    assert type(s) is types.OSData
    for c, dt in (("rng", np.uint16), ("rfl", np.uint8), ("nir", np.uint16)):
        got = getattr(s, c)
        assert got.shape == (1, 2, 4, 16) and got.dtype == dt
        np.testing.assert_array_equal(got[0], truth["lidar"][c][4:6], err_msg=c)
    np.testing.assert_array_equal(s.timestamps[0], ts[4:6])
    os.remove(os.path.join(path, "lidar.json"))
    with pytest.warns(UserWarning, match="lidar.json"):
        assert S.OSLidar(path).metadata.intrinsics == ""


def test_camera_and_semseg_samples(rover):
    root, truth = rover
    cam = S.Camera(os.path.join(root, "camera"), correction="auto")
    ts = truth["camera"]["ts"]
    close_ts(cam.metadata.timestamps, smooth_ref(ts, 30.0))
    ref = opencv_frames(os.path.join(root, "camera", "video.avi"))
    assert len(ref) == len(ts)
    for i in (0, 1, 17, len(ts) - 1):
        s = cam[i]
        assert type(s) is types.CameraData and s.image.shape == (1, 1, 24, 32, 3) and s.image.dtype == np.uint8
        close_px(s.image[0, 0], ref[i])
    jpg = S.Camera(os.path.join(root, "jpgcam"), key="image", past=1, future=1)
    s = jpg[4]
    assert s.image.shape == (1, 3, 24, 32, 3)
    ref = opencv_frames(os.path.join(root, "jpgcam", "image"))
    for k in range(3):
        close_px(s.image[0, k], ref[3 + k])
    small = S.Camera(os.path.join(root, "camera"), resolution=(16, 12), interp="area")
    full = cam[9].image[0, 0]
    np.testing.assert_array_equal(small[9].image[0, 0], cv2.resize(full, (16, 12), interpolation=cv2.INTER_AREA))
    seg = S.Semseg(os.path.join(root, "_camera"))
    s = seg[2]
    assert type(s) is types.CameraSemseg and s.semseg.shape == (1, 1, 24, 32) and s.semseg.dtype == np.uint8
    np.testing.assert_array_equal(s.semseg[0, 0], truth["_camera"]["segment"][2])
    np.testing.assert_array_equal(s.timestamps[0], truth["_camera"]["ts"][2:3])


def test_imu_and_pose_samples(rover):
    root, truth = rover
    imu = S.IMU(os.path.join(root, "imu"), correction="auto")
    ts = truth["imu"]["ts"]
    n = len(truth["imu"]["avel"])  # one short: every channel is cut to it
    assert n == len(ts) - 1 and len(imu.metadata.timestamps) == n
    close_ts(imu.metadata.timestamps, smooth_ref(ts, 30.0)[:n])
    s = imu[n - 1]
    assert type(s) is types.IMUData
    for c in ("acc", "rot", "avel"):
        got = getattr(s, c)
        assert got.shape == (1, 1, 3) and got.dtype == np.float32
        np.testing.assert_array_equal(got[0, 0], truth["imu"][c][n - 1])
    w = S.IMU(os.path.join(root, "imu"), past=3)[10]
    np.testing.assert_array_equal(w.acc[0], truth["imu"]["acc"][7:11])
    np.testing.assert_array_equal(w.timestamps[0], ts[7:11])
    pose = S.Pose(os.path.join(root, "pose"))
    want = truth["pose"]
    assert len(pose) == len(want["t"])
    np.testing.assert_array_equal(pose.metadata.timestamps, want["t"])
    s = pose[4]
    assert type(s) is types.Pose
    for c in ("pos", "vel", "acc", "rot"):
        got = getattr(s, c)
        assert got.dtype == np.float32 and got.shape == (1, 1, *want[c].shape[1:])
        np.testing.assert_array_equal(got[0, 0], want[c][4].astype(np.float32))
    assert s.timestamps.dtype == np.float64 and s.timestamps[0, 0] == want["t"][4]
    with pytest.raises(ValueError):
        pose["pos"]
    with pytest.raises(FileNotFoundError, match="pose.npz"):
        S.Pose(os.path.join(root, "pose"), reference="lidar")


def meta_of(path):
    with open(os.path.join(path, "meta.json")) as f:
        return json.load(f)


def test_dynamic_sensor_and_from_config(trace):
    root, truth = trace
    d = S.DynamicSensor(os.path.join(root, "lidar"), past=1, future=2)
    s = d[5]
    assert list(s) == ["ts", "rng", "hist", "pose"]
    for c, got in s.items():
        np.testing.assert_array_equal(got, truth["lidar"][c][4:8], err_msg=c)
    sub = S.DynamicSensor(os.path.join(root, "lidar"), subset=["hist"])
    assert list(sub[0]) == ["hist"] and sub[0]["hist"].shape == (1, 5)
    assert isinstance(d["rng"], roverd.channels.LzmaFrameChannel)
    np.testing.assert_array_equal(d.metadata.timestamps, truth["lidar"]["ts"])
    assert d.duration == truth["lidar"]["ts"][-1] - truth["lidar"]["ts"][0]
    assert d.framerate == pytest.approx((N - 1) / d.duration)
    path = os.path.join(root, "imu")
    assert type(S.from_config(path, None)) is S.DynamicSensor
    inst = S.DynamicSensor(path)
    assert S.from_config(path, inst) is inst
    assert S.from_config(path, lambda p: S.DynamicSensor(p, subset=["acc"])).subset == ["acc"]
    with pytest.raises(ValueError, match="unknown sensor type"):
        S.from_config(path, "sonar")
    with pytest.raises(ValueError, match="meta.json"):
        S.DynamicSensor(os.path.join(root, "nope"))
    # create=True makes the sensor (writing is tested in test_redrover_write.py).
    with pytest.raises(ValueError, match="exists"):
        S.DynamicSensor(path, create=True)
    assert list(S.DynamicSensor(path, create=True, exist_ok=True).channels) == list(meta_of(path))


def test_channels_read_like_upstreams(trace):
    root, truth = trace
    meta = {}
    for s in truth:
        with open(os.path.join(root, s, "meta.json")) as f:
            meta[s] = json.load(f)
    kinds = {"raw": "RawChannel", "lzma": "LzmaChannel", "lzmaf": "LzmaFrameChannel", "npz": "NPZBlobChannel", "jpg": "JPEGBlobChannel", "mjpg": "VideoChannel"}
    seen = set()
    for s, chans in meta.items():
        for c, cfg in chans.items():
            ch = roverd.channels.from_config(path=os.path.join(root, s, c), **cfg)
            seen.add(cfg["format"])
            assert type(ch).__name__ == kinds[cfg["format"]]
            assert ch.type == np.dtype(cfg["type"]) and ch.shape == tuple(cfg["shape"])
            assert ch.size == int(np.prod(cfg["shape"])) * np.dtype(cfg["type"]).itemsize
            want = truth[s][c]
            if cfg["format"] in ("jpg", "mjpg"):
                got = ch.read(3, 4)
                assert got.shape == (4, 48, 64, 3)
                ref = opencv_frames(ch.path)
                for k in range(4):
                    close_px(got[k], ref[3 + k])
                continue
            np.testing.assert_array_equal(ch.read(), want)
            np.testing.assert_array_equal(ch.read(5, 3), want[5:8])
            np.testing.assert_array_equal(ch.read(N - 2, 10), want[N - 2:])  # past the end: what exists
            assert ch[4].shape == (1, *want.shape[1:])  # upstream keeps the axis
            np.testing.assert_array_equal(ch[4][0], want[4])
            items = list(ch.stream())
            np.testing.assert_array_equal(np.stack(items), want)
            batches = list(ch.stream(batch=10, transform=lambda a: a * 1))
            assert [len(b) for b in batches] == [10, 10, 3]
            np.testing.assert_array_equal(np.concatenate(list(ch.stream_prefetch(batch=7))), want)
    assert seen == set(kinds)
    raw = roverd.channels.from_config(os.path.join(root, "imu", "acc"), **meta["imu"]["acc"])
    mm = raw.memmap()
    np.testing.assert_array_equal(mm, truth["imu"]["acc"])
    assert raw.filesize == os.path.getsize(os.path.join(root, "imu", "acc"))
    with pytest.raises(IndexError, match="acc"):
        raw.read(N + 1, 1)
    with pytest.raises(ValueError, match='unknown channel format "tar"'):
        roverd.channels.from_config(os.path.join(root, "imu", "acc"), format="tar", type="u1", shape=[])
    shutil.rmtree(os.path.join(root, "camera", "img"))
    cam = roverd.channels.from_config(os.path.join(root, "camera", "img"), **meta["camera"]["img"])
    with pytest.raises(roverlog.Error, match="img"):
        cam.read(0, 1)


def test_ouster_destagger_and_point_cloud_follow_the_ouster_formulas(rover):
    from roverlog.redrover.transforms import ouster

    from conftest import OUSTER_METADATA as M

    root, truth = rover
    lidar = S.OSLidarDepth(os.path.join(root, "lidar"), past=1)
    sample = lidar[6]
    rng = truth["lidar"]["rng"][5:7]
    depth = ouster.Destagger()(sample)
    assert type(depth) is types.Depth and depth.rng.shape == (1, 2, 4, 16)
    for h, shift in enumerate(M["lidar_data_format"]["pixel_shift_by_row"]):
        np.testing.assert_array_equal(depth.rng[0, :, h], np.roll(rng[:, h], shift, axis=-1))
    np.testing.assert_array_equal(depth.timestamps, sample.timestamps)

    # Each point by the Ouster Software User Guide's formula, one at a time.
    alt = np.radians(M["beam_intrinsics"]["beam_altitude_angles"])
    az = np.radians(M["beam_intrinsics"]["beam_azimuth_angles"])
    b2l = np.array(M["beam_intrinsics"]["beam_to_lidar_transform"], float).reshape(4, 4)
    l2s = np.array(M["lidar_intrinsics"]["lidar_to_sensor_transform"], float).reshape(4, 4)
    bx, bz = b2l[0, 3], b2l[2, 3]
    W = M["lidar_data_format"]["columns_per_frame"]
    for min_range in (None, 30.0):
        pc = ouster.PointCloud(min_range=min_range)(sample)
        assert type(pc) is types.PointCloud and pc.xyz.dtype == np.float32 and pc.length.shape == (1, 2)
        for f in range(2):
            want = []
            for h in range(4):
                for w in range(W):
                    r = float(rng[f, h, w])
                    if r == 0:
                        continue
                    enc = 2 * np.pi * (1 - w / W)
                    rr = r - np.hypot(bx, bz)
                    p = np.array([
                        rr * np.cos(alt[h]) * np.cos(enc - az[h]) + bx * np.cos(enc),
                        rr * np.cos(alt[h]) * np.sin(enc - az[h]) + bx * np.sin(enc),
                        rr * np.sin(alt[h]) + bz,
                    ]) / 1000.0
                    p = l2s[:3, :3] @ p + l2s[:3, 3] / 1000.0
                    if min_range is None or np.linalg.norm(p.astype(np.float32)) >= min_range:
                        want.append(p)
            want = np.array(want, np.float32)
            n = pc.length[0, f]
            assert n == len(want) > 0
            np.testing.assert_allclose(pc.xyz[0, f, :n], want, rtol=0, atol=2e-5)
            assert not pc.xyz[0, f, n:].any()
    with pytest.raises(ValueError, match="does not exist"):
        ouster.Destagger()(types.OSDepth(rng=sample.rng, timestamps=sample.timestamps, intrinsics=os.path.join(root, "nope.json")))
