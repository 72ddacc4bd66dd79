"""Damaged channels read up to the damage (issue 25): a trace written the way upstream writes
it, then damaged (an `lzmaf` data file cut to 70%, a `raw` file cut inside a record, a blob
file deleted in the middle, an AVI cut short). Every intact sample reads as written, and the
frames read are the ones upstream's rules read; a damaged sample raises
`roverlog.DamagedSampleError` naming the channel, the sample and `roverlog recover`."""
import lzma
import os
import pickle

import cv2
import numpy as np
import pytest

import roverlog

from conftest import N


def cut(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def assert_damaged(channel, index, call=None):
    """`channel[index]` (or `call()`) raises the damaged-sample error naming both."""
    with pytest.raises(roverlog.DamagedSampleError) as e:
        channel[index] if call is None else call()
    err = e.value
    assert isinstance(err, roverlog.FormatError) and isinstance(err, ValueError)
    assert not isinstance(err, IndexError)
    assert (err.path, err.index) == (channel.path, index)
    # Worker processes (a DataLoader's) send it back pickled.
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.path, back.index, str(back)) == (type(err), err.path, err.index, str(err))
    msg = str(err)
    assert channel.path in msg and f"sample {index} is damaged" in msg and "roverlog recover" in msg, msg
    return msg


def close(ours, theirs):
    d = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
    assert d.mean() < 1.0 and d.max() <= 40, (d.mean(), d.max())


def test_an_lzmaf_channel_cut_to_70_percent_reads_the_frames_upstream_reads(trace):
    root, truth = trace
    path = os.path.join(root, "lidar", "rng")
    offsets = np.fromfile(path + "_i", dtype="<u8")
    at = os.path.getsize(path) * 7 // 10 + 3
    cut(path, at)
    with open(path, "rb") as f:
        data = f.read()
    # Upstream decodes frame k from [off[k], off[k+1]): whole up to the cut, then it fails.
    intact = 0
    for a, b in zip(offsets[:-1], offsets[1:]):
        try:
            lzma.decompress(data[a:b])
        except lzma.LZMAError:
            break
        intact += 1
    assert 0 < intact < N

    lidar = roverlog.Trace(root)["lidar"]
    rng = lidar.channels["rng"]
    want = truth["lidar"]["rng"]
    assert len(lidar) == N and len(rng) == intact
    np.testing.assert_array_equal(rng.read(), want[:intact])
    np.testing.assert_array_equal(rng[intact - 1], want[intact - 1])
    np.testing.assert_array_equal(rng[-1], want[intact - 1])
    np.testing.assert_array_equal(np.concatenate(list(rng.stream(batch=4))), want[:intact])
    msg = assert_damaged(rng, intact)
    assert "the file ends inside it" in msg, msg
    assert_damaged(rng, N - 1)
    assert_damaged(rng, intact, lambda: rng.read(intact - 2, 4))
    assert_damaged(rng, intact, lambda: lidar[intact])
    # A sensor's stream gives the samples before the damage, then says so.
    got = []
    assert_damaged(rng, intact, lambda: got.extend(lidar.stream()))
    assert len(got) == intact
    np.testing.assert_array_equal(got[-1]["rng"], want[intact - 1])
    with pytest.raises(roverlog.SampleIndexError):
        rng[N]


def test_a_raw_channel_cut_inside_a_record_reads_its_whole_records(trace):
    root, truth = trace
    path = os.path.join(root, "imu", "acc")
    per = 3 * 4
    cut(path, 12 * per + per // 2)
    imu = roverlog.Trace(root)["imu"]
    acc = imu.channels["acc"]
    want = truth["imu"]["acc"]
    # numpy's view of the file by upstream's rule (`filesize // size` records).
    upstream = np.memmap(path, dtype="<f4", mode="r", shape=(os.path.getsize(path) // per, 3))
    assert len(imu) == N and len(acc) == 12 == len(upstream)
    np.testing.assert_array_equal(acc.read(), want[:12])
    np.testing.assert_array_equal(acc.read(), upstream)
    np.testing.assert_array_equal(acc[11], want[11])
    assert "the file ends inside it (6 of its 12 bytes)" in assert_damaged(acc, 12)
    assert "the file ends before it" in assert_damaged(acc, 13)
    assert_damaged(acc, 12, lambda: acc.read(10, 4))
    # A slice is clamped to the length, as Python's are.
    np.testing.assert_array_equal(acc[10:14], want[10:12])
    assert_damaged(acc, 12, lambda: imu[12])
    with pytest.raises(roverlog.SampleIndexError):
        acc[N]
    # The other channels of the sensor are whole.
    np.testing.assert_array_equal(imu.channels["rot"][15], truth["imu"]["rot"][15])


@pytest.mark.usefixtures("each_jpeg_decoder")
def test_a_blob_file_missing_in_the_middle_keeps_the_count_and_the_later_frames(trace):
    root, truth = trace
    os.remove(os.path.join(root, "camera", "img", "000007.jpg"))
    os.remove(os.path.join(root, "lidar", "pose", "000005.npz"))
    t = roverlog.Trace(root)
    img = t["camera"].channels["img"]
    jpegs = truth["camera"]["img.jpeg"]
    assert len(img) == N
    assert img.read(0, 7, decode=False) == jpegs[:7]
    assert img.read(8, N - 8, decode=False) == jpegs[8:]
    for i in [6, 8, N - 1]:
        ref = cv2.imdecode(np.frombuffer(jpegs[i], np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        close(img[i], ref)
    assert "000007.jpg is missing" in assert_damaged(img, 7)
    assert_damaged(img, 7, lambda: img.read())
    assert_damaged(img, 7, lambda: t["camera"][7])

    pose = t["lidar"].channels["pose"]
    want = truth["lidar"]["pose"]
    assert len(pose) == N
    np.testing.assert_array_equal(pose[4], want[4])
    np.testing.assert_array_equal(pose.read(6, N - 6), want[6:])
    assert_damaged(pose, 5)

    # The last frames gone: the count is what ts and the listing agree on.
    for i in range(15, N):
        os.remove(os.path.join(root, "camera", "img", "%06d.jpg" % i))
    img = roverlog.Trace(root)["camera"].channels["img"]
    assert len(img) == 15
    assert img.read(8, 7, decode=False) == jpegs[8:15]
    assert_damaged(img, 15)
    assert_damaged(img, 7)


def _opencv_frames(path):
    cap = cv2.VideoCapture(path)
    frames = []
    while cap.isOpened():
        ok, img = cap.read()
        if not ok:
            break
        frames.append(img[..., ::-1])
    cap.release()
    return frames


@pytest.mark.usefixtures("each_jpeg_decoder")
def test_a_cut_video_reads_its_whole_frames(trace):
    root, truth = trace
    path = os.path.join(root, "video", "video.avi")
    with open(path, "rb") as f:
        original = f.read()
    whole = len(original)
    for at in [whole // 2, whole * 7 // 10]:
        with open(path, "wb") as f:
            f.write(original[:at])
        video = roverlog.Trace(root)["video"].channels["video.avi"]
        n = len(video)
        assert 0 < n < N
        # Upstream reads with OpenCV, which also gives the frame the cut went through, decoded
        # as far as its bytes go: that one is damaged here.
        theirs = _opencv_frames(path)
        assert n <= len(theirs) <= n + 1, (at, n, len(theirs))
        frames = video.read()
        assert frames.shape == (n, 48, 64, 3)
        jpegs = video.read(decode=False)
        for i in range(n):
            libjpeg = cv2.imdecode(np.frombuffer(jpegs[i], np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
            close(frames[i], libjpeg)
            # VideoCapture's YUV -> RGB differs from libjpeg's by itself: no further from ours.
            vc = theirs[i].astype(np.int16)
            ours_vc = np.abs(frames[i].astype(np.int16) - vc).mean()
            assert ours_vc <= np.abs(libjpeg.astype(np.int16) - vc).mean() + 0.5
        assert "holds only" in assert_damaged(video, n)
        assert_damaged(video, N - 1)

    # Cut inside its header: no frame (OpenCV reads none), every one ts counts is damaged.
    cut(path, 100)
    assert _opencv_frames(path) == []
    video = roverlog.Trace(root)["video"].channels["video.avi"]
    assert len(video) == 0
    assert video.read().shape == (0, 48, 64, 3)
    assert_damaged(video, 0)
    assert_damaged(video, 0, lambda: roverlog.Trace(root)["video"][0])


def test_a_whole_file_lzma_channel_cut_short_reads_what_decodes(trace):
    root, truth = trace
    path = os.path.join(root, "lidar", "hist")
    size = os.path.getsize(path)
    cut(path, size * 7 // 10)
    per = 5 * 4

    def upstream(i):
        # Upstream's LzmaChannel.read(i, 1): seek in the decompressed stream, read one sample.
        with lzma.open(path, "rb") as f:
            f.seek(per * i)
            return f.read(per)

    theirs = 0
    while True:
        try:
            if len(upstream(theirs)) < per:
                break
        except (EOFError, lzma.LZMAError):
            break
        theirs += 1
    hist = roverlog.Trace(root)["lidar"].channels["hist"]
    want = truth["lidar"]["hist"]
    n = len(hist)
    # liblzma hands out the torn block's output as it decodes; our decoder gives a little
    # less of that block (a few samples fewer), never a sample that is not there.
    assert 0 < n <= theirs < N, (n, theirs)
    np.testing.assert_array_equal(hist.read(), want[:n])
    assert_damaged(hist, n)
    assert_damaged(hist, N - 1)
