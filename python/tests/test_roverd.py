"""roverlog.Trace against what upstream writes and numpy reads by upstream's rules."""
import json
import multiprocessing
import os
import pickle

import cv2
import numpy as np
import pytest

import roverlog

from conftest import N


def close(ours, theirs):
    """JPEG pixels within the decoder tolerance the Rust tests use (libjpeg-turbo)."""
    d = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
    assert d.mean() < 1.0 and d.max() <= 40, (d.mean(), d.max())


def test_fixed_size_channels_equal_what_was_written(trace):
    root, truth = trace
    t = roverlog.Trace(root)
    assert sorted(t.sensors) == ["camera", "imu", "lidar", "video"]
    for sensor in ["imu", "lidar"]:
        s = t[sensor]
        assert len(s) == N
        np.testing.assert_array_equal(s.timestamps, truth[sensor]["ts"])
        for name, want in truth[sensor].items():
            if name == "ts":
                continue
            c = s.channels[name]
            got = c.read()
            assert got.dtype == want.dtype.newbyteorder("<") and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
            np.testing.assert_array_equal(c[5], want[5])
            np.testing.assert_array_equal(c[-1], want[-1])
            np.testing.assert_array_equal(c[3:17:4], want[3:17:4])
            np.testing.assert_array_equal(c.read(start=20), want[20:])
            batches = list(c.stream(batch=10))
            assert [len(b) for b in batches] == [10, 10, 3]
            np.testing.assert_array_equal(np.concatenate(batches), want)


def test_a_whole_file_lzma_channel_reads_single_samples_in_any_order(trace):
    """Single reads and small batches of a whole-file `lzma` channel decode the stream once and
    keep it with the open channel (issue 25: streaming to each index decoded everything before
    it, every time); a read of most of the channel streams. Any order, any mix, same samples."""
    root, truth = trace
    hist = roverlog.Trace(root)["lidar"].channels["hist"]
    want = truth["lidar"]["hist"]
    np.testing.assert_array_equal(hist.read(1), want[1:])  # most of it: streamed
    for i in np.random.default_rng(3).permutation(len(want)):
        np.testing.assert_array_equal(hist[int(i)], want[i])
    np.testing.assert_array_equal(hist.read(7, 3), want[7:10])
    np.testing.assert_array_equal(hist.read(), want)


def test_raw_is_a_zero_copy_view_of_the_file_and_writable_copies_on_request(trace):
    root, _ = trace
    acc = roverlog.Trace(root)["imu"].channels["acc"]
    a = acc.read()
    assert not a.flags.writeable and not a.flags.owndata
    mm = np.memmap(os.path.join(root, "imu", "acc"), dtype="<f4", mode="r").reshape(N, 3)
    np.testing.assert_array_equal(a, mm)
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    w = roverlog.Trace(root, writable=True)["imu"].channels["acc"].read()
    assert w.flags.writeable
    w[0, 0] = 1.0  # a copy: the file is untouched
    np.testing.assert_array_equal(acc.read(), mm)


@pytest.mark.usefixtures("each_jpeg_decoder")
def test_jpeg_channels_decode_like_libjpeg_and_give_bytes_on_request(trace):
    root, truth = trace
    t = roverlog.Trace(root)
    cam = t["camera"].channels["img"]
    frames = cam.read()
    assert frames.shape == (N, 48, 64, 3) and frames.dtype == np.uint8
    for i, b in enumerate(truth["camera"]["img.jpeg"]):
        ref = cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        close(frames[i], ref)
    assert cam.read(2, 3, decode=False) == truth["camera"]["img.jpeg"][2:5]
    video = t["video"].channels["video.avi"]
    assert len(video) == N
    jpegs = video.read(decode=False)
    assert len(jpegs) == N and all(j[:2] == b"\xff\xd8" for j in jpegs)
    cap = cv2.VideoCapture(video.path)
    for i in range(N):
        ok, img = cap.read()
        assert ok
        libjpeg = cv2.imdecode(np.frombuffer(jpegs[i], np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        close(video[i], libjpeg)
        # VideoCapture's YUV -> RGB differs from libjpeg's by itself: no further from ours.
        vc = img[..., ::-1].astype(np.int16)
        ours_vc = np.abs(video[i].astype(np.int16) - vc).mean()
        theirs_vc = np.abs(libjpeg.astype(np.int16) - vc).mean()
        assert ours_vc <= theirs_vc + 0.5, (ours_vc, theirs_vc)


def test_time_index_and_nearest_synchronisation(trace):
    root, truth = trace
    t = roverlog.Trace(root)
    imu = t["imu"]
    ts = truth["imu"]["ts"]
    assert imu.index_at(ts[7]) == 7
    assert imu.index_at(ts[7] + 1e-6) == 8
    np.testing.assert_array_equal(imu.index_at(ts[:5]), np.arange(5))
    sync = roverlog.Nearest("lidar", tol=0.006)  # strictly closer than
    idx = sync({n: s.timestamps for n, s in t.sensors.items()})
    for name, i in idx.items():
        assert len(i) == len(idx["lidar"])
        assert np.all(np.abs(t[name].timestamps[i] - t["lidar"].timestamps[idx["lidar"]]) < 0.006)
    st = roverlog.Trace(root, sync=sync)
    assert len(st) == len(idx["lidar"]) > 0
    sample = st[0]
    np.testing.assert_array_equal(sample["imu"]["acc"], truth["imu"]["acc"][idx["imu"][0]])


def _sum_channel(ch):
    return float(np.asarray(ch.read(), dtype=np.float64).sum())


def test_every_reader_pickles_and_works_in_worker_processes(trace):
    root, truth = trace
    t = roverlog.Trace(root)
    again = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(again["lidar"].channels["rng"].read(), truth["lidar"]["rng"])
    chans = [t["imu"].channels["acc"], t["lidar"].channels["rng"], t["lidar"].channels["hist"]]
    for method in ["fork", "spawn"]:
        with multiprocessing.get_context(method).Pool(2) as pool:
            got = pool.map(_sum_channel, chans)
        want = [float(truth[c.path.split(os.sep)[-2]][c.name].astype(np.float64).sum()) for c in chans]
        assert got == want, method
    # A DataLoader-style loop: workers index the dataset object they were handed.
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.starmap(_item, [(t["camera"].channels["img"], i) for i in range(N)])
    np.testing.assert_array_equal(np.stack(got), t["camera"].channels["img"].read())


def _item(ch, i):
    return ch[i]


def test_bad_input_raises_clear_exceptions(trace, tmp_path):
    root, _ = trace
    with pytest.raises(FileNotFoundError, match="no such trace"):
        roverlog.Trace(str(tmp_path / "missing"))
    t = roverlog.Trace(root)
    with pytest.raises(KeyError, match='no sensor "gps"'):
        t["gps"]
    acc = t["imu"].channels["acc"]
    for bad in [lambda: acc[N], lambda: acc.read(20, 5), lambda: t["lidar"].channels["rng"].read(22, 2)]:
        with pytest.raises(IndexError, match="out of range"):
            bad()
    with pytest.raises(TypeError):
        acc["x"]
    with pytest.raises(TypeError, match="synchronisation"):
        t[0]
    # A corrupt lzmaf frame: the library's message, as roverlog.Error (a ValueError).
    path = os.path.join(root, "lidar", "rng")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[40:60] = b"\0" * 20
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(roverlog.Error, match="rng") as e:
        t["lidar"].channels["rng"].read()
    assert isinstance(e.value, ValueError)
    # A missing channel file.
    os.remove(os.path.join(root, "lidar", "hist"))
    with pytest.raises(FileNotFoundError, match="hist"):
        t["lidar"].channels["hist"].read()
    with open(os.path.join(root, "imu", "meta.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(roverlog.Error, match="meta.json"):
        roverlog.Trace(root)


def test_the_abstract_dataloader_protocols_hold(trace):
    from abstract_dataloader import generic, spec

    root, _ = trace
    sync = roverlog.Nearest("lidar", tol=0.02)
    t = roverlog.Trace(root, sync=sync)
    assert isinstance(t, spec.Trace)
    assert isinstance(sync, spec.Synchronization)
    for s in t.sensors.values():
        assert isinstance(s, spec.Sensor)
        assert isinstance(s.metadata, spec.Metadata)
        assert len(s.metadata.timestamps) == len(s)
    ts = {n: s.metadata.timestamps for n, s in t.sensors.items()}
    theirs = generic.Nearest("lidar", tol=0.02)(ts)
    ours = sync(ts)
    assert ours.keys() == theirs.keys()
    for n in ours:
        assert ours[n].dtype == theirs[n].dtype
        np.testing.assert_array_equal(ours[n], theirs[n])
    assert len(t) == len(theirs["lidar"]) > 0
    first = t[0]
    assert set(first) == set(t.sensors)


def test_an_open_channel_sees_the_samples_a_live_trace_appends(trace):
    """A channel keeps its listing/index between reads (issue 25: reopening on every access
    cost 70-190 ms on a long drive) and still sees a trace that is being recorded grow."""
    import lzma
    import shutil

    root, truth = trace
    t = roverlog.Trace(root)
    cam, rng = t["camera"].channels["img"], t["lidar"].channels["rng"]
    assert (len(cam), len(rng)) == (N, N)
    cam[N - 1], rng[N - 1]  # both opened and read once
    with pytest.raises(IndexError):
        cam[N]
    # Another writer appends one sample to each sensor, `ts` last, as the daemon does.
    shutil.copy(os.path.join(root, "camera", "img", "%06d.jpg" % 0), os.path.join(root, "camera", "img", "%06d.jpg" % N))
    new = np.full((8, 16), 7, "<u2")
    with open(os.path.join(root, "lidar", "rng"), "ab") as f:
        f.write(lzma.compress(new.tobytes(), preset=0))
        end = f.tell()
    with open(os.path.join(root, "lidar", "rng_i"), "ab") as f:
        f.write(np.array([end], "<u8").tobytes())
    for s in ("camera", "lidar"):
        with open(os.path.join(root, s, "ts"), "ab") as f:
            f.write(np.array([2e9], "<f8").tobytes())
    assert (len(cam), len(rng)) == (N + 1, N + 1)
    np.testing.assert_array_equal(rng[N], new)
    close(cam[N], cam[0])


@pytest.mark.usefixtures("each_jpeg_decoder")
def test_gray_jpegs_read_one_at_a_time_and_whole_as_rgb(tmp_path):
    # Grayscale frames decode to one channel and are spread to R, G, B in place; a single
    # read takes its shape from the headers and decodes the frame once.
    root = tmp_path / "gray"
    cam = root / "cam"
    (cam / "img").mkdir(parents=True)
    (root / "config.yaml").write_text("")
    rng = np.random.default_rng(3)
    refs = []
    for i in range(4):
        img = (np.add.outer(np.arange(24), np.arange(32)) * (i + 3) % 256).astype(np.uint8)
        img = np.clip(img.astype(np.int16) + rng.integers(-5, 5, img.shape), 0, 255).astype(np.uint8)
        ok, b = cv2.imencode(".jpg", img)
        assert ok
        (cam / "img" / ("%06d.jpg" % i)).write_bytes(b.tobytes())
        gray = cv2.imdecode(np.frombuffer(b.tobytes(), np.uint8), cv2.IMREAD_GRAYSCALE)
        assert gray.ndim == 2
        refs.append(np.dstack([gray, gray, gray]))
    (np.arange(4, dtype="<f8") + 1.7e9).tofile(cam / "ts")
    (cam / "meta.json").write_text(json.dumps({
        "ts": {"format": "raw", "type": "f8", "shape": [], "desc": ""},
        "img": {"format": "jpg", "type": "u1", "shape": [24, 32, 3], "desc": ""}}))
    ch = roverlog.Trace(str(root))["cam"].channels["img"]
    whole = ch.read()
    assert whole.shape == (4, 24, 32, 3)
    for i, ref in enumerate(refs):
        assert ch[i].shape == (24, 32, 3)
        close(ch[i], ref)
        close(whole[i], ref)
        assert (ch[i][..., 0] == ch[i][..., 2]).all()
    with pytest.raises(IndexError, match="out of range"):
        ch[4]
