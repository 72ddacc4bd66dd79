"""roverlog.redrover writes as upstream roverd's channel classes write (issue 36): the checks
of upstream's `format/tests/test_channels.py` in our words (every fixed-size format written
by `write` and by `consume`, read and streamed back; videos written, read whole, resized and
at random; `memmap`), the files byte for byte what upstream's writers produce, the blob
channels, queues and threads as `consume` takes them, bad data refused naming the file, and
a sensor made with `DynamicSensor(create=True)` that roverlog's own reader and checks
accept."""
import json
import lzma
import os
import queue
import time

import numpy as np
import pytest

import roverlog
from roverlog.redrover import channels, sensors
from roverlog.redrover.channels import (
    JPEGBlobChannel, LzmaChannel, LzmaFrameChannel, NPZBlobChannel, RawChannel, VideoChannel,
)
from roverlog.redrover.channels.utils import Buffer, ExceptionSentinel, Prefetch, batch_iterator

from conftest import images, write_channel


def noise(shape, seed=42):
    return np.random.default_rng(seed).random(shape)


def channel_at(cls, tmp_path, name, data, **kw):
    return cls(str(tmp_path / name), dtype=data.dtype, shape=data.shape[1:], **kw)


@pytest.mark.parametrize("cls", [LzmaFrameChannel, LzmaChannel, RawChannel])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_fixed_size_channels_written_whole_or_consumed_read_back(cls, dtype, tmp_path):
    data = (noise((3, 4, 5)) * 1000).astype(dtype)
    channel_at(cls, tmp_path, "whole", data).write(data)
    channel_at(cls, tmp_path, "consumed", data).consume(sample[None] for sample in data)
    for name in ("whole", "consumed"):
        ch = channel_at(cls, tmp_path, name, data)
        assert not os.path.exists(tmp_path / "meta.json")  # opened from its arguments alone
        np.testing.assert_array_equal(ch.read(), data)
        np.testing.assert_array_equal(np.stack(list(ch.stream(transform=lambda x: x * 2))), data * 2)
        np.testing.assert_array_equal(ch[2], data[2][None])


def test_the_files_are_what_upstreams_writers_write(tmp_path):
    """`raw`: `tofile`; `lzmaf`: `lzma.compress(sample, preset)` per frame and the `_i`
    offsets; `lzma`: one `.xz` stream of the samples (conftest's writers follow upstream's)."""
    data = (noise((40, 6, 7), 3) * 3000).astype(np.uint16)
    for fmt, cls in (("raw", RawChannel), ("lzmaf", LzmaFrameChannel), ("lzma", LzmaChannel)):
        write_channel(str(tmp_path / ("ref_" + fmt)), fmt, "u2", data)
        channel_at(cls, tmp_path, "ours_" + fmt, data).write(data)
        for suffix in ("", "_i") if fmt == "lzmaf" else ("",):
            ours = (tmp_path / ("ours_" + fmt + suffix)).read_bytes()
            ref = (tmp_path / ("ref_" + fmt + suffix)).read_bytes()
            if fmt == "lzma":
                assert lzma.decompress(ours) == lzma.decompress(ref) == data.tobytes()
            else:
                assert ours == ref, fmt + suffix
    # Another preset, as upstream's `write(data, preset=...)`.
    channel_at(LzmaFrameChannel, tmp_path, "p6", data).write(data, preset=6)
    off = np.fromfile(str(tmp_path / "p6_i"), "<u8")
    blob = (tmp_path / "p6").read_bytes()
    assert lzma.decompress(blob[off[1]:off[2]], format=lzma.FORMAT_XZ) == data[1].tobytes()
    assert blob[off[1]:off[2]] == lzma.compress(data[1].tobytes(), preset=6)


def test_raw_appends_and_memmaps(tmp_path):
    data = (noise((10, 4, 5)) * 1000).astype(np.float32)
    ch = channel_at(RawChannel, tmp_path, "mm", data)
    ch.write(data[:6])
    ch.write(data[6:], append=True)
    np.testing.assert_array_equal(ch.memmap(), data)
    ch.write(data[6:].tobytes(), append=True)  # bytes are written as they are
    assert len(ch.memmap()) == 14 and ch.filesize == 14 * ch.size
    with pytest.raises(ValueError, match="append"):
        channel_at(LzmaChannel, tmp_path, "lz", data).write(data, append=True)
    with pytest.raises(ValueError, match="append"):
        channel_at(LzmaFrameChannel, tmp_path, "lzf", data).write(data, append=True)


def test_videos_written_read_resized_and_at_random(tmp_path):
    data = (noise((3, 8, 16, 3)) * 255).astype(np.uint8)
    channel_at(VideoChannel, tmp_path, "whole.avi", data).write(data)
    channel_at(VideoChannel, tmp_path, "consumed.avi", data).consume(iter(data))
    for name in ("whole.avi", "consumed.avi"):
        ch = channel_at(VideoChannel, tmp_path, name, data)
        assert ch.shape == data.shape[1:]
        assert np.stack(list(ch.stream())).shape == data.shape
        assert ch[2].shape == (1, 8, 16, 3)
    big = (noise((3, 64, 128, 3)) * 255).astype(np.uint8)
    channel_at(VideoChannel, tmp_path, "big.avi", big).write(big)
    for size, want in (((64, 32), (3, 32, 64, 3)), ((32, 16), (3, 16, 32, 3))):
        ch = channel_at(VideoChannel, tmp_path, "big.avi", big, resolution=size)
        assert ch.read().shape == want and np.stack(list(ch.stream())).shape == want
    for interp in ("nearest", "linear", "cubic", "area", "lanczos"):
        ch = channel_at(VideoChannel, tmp_path, "big.avi", big, resolution=(32, 32), interp=interp)
        assert ch.read(0, 2).shape == (2, 32, 32, 3)
    # Smooth frames survive MJPEG closely: what was written is what is read.
    smooth = images(5, 32, 48)
    ch = channel_at(VideoChannel, tmp_path, "smooth.avi", smooth)
    ch.consume(iter(smooth), fps=30.0)
    got = ch.read()
    assert got.shape == smooth.shape
    assert np.abs(got.astype(int) - smooth.astype(int)).mean() < 3


@pytest.mark.parametrize("cls", [LzmaFrameChannel, RawChannel, VideoChannel])
def test_random_reads_of_written_channels(cls, tmp_path):
    video = cls is VideoChannel
    data = (noise((5, 8, 16, 3)) * (255 if video else 1000)).astype(np.uint8 if video else np.float32)
    ch = channel_at(cls, tmp_path, "random.avi", data)  # upstream's name for all three
    ch.write(data)
    for i in (0, 3):
        if video:
            assert ch[i].shape == data[i][None].shape
        else:
            np.testing.assert_array_equal(ch[i], data[i][None])


def test_blob_channels_write_and_consume(tmp_path):
    arrays = (noise((6, 3, 2)) * 100).astype(np.float64)
    for compress in (False, True):
        ch = channel_at(NPZBlobChannel, tmp_path, f"npz{compress}", arrays, compress=compress)
        ch.write(arrays)
        assert sorted(os.listdir(ch.path)) == ["%06d.npz" % i for i in range(6)]
        with np.load(os.path.join(ch.path, "000004.npz")) as z:
            np.testing.assert_array_equal(z["data"], arrays[4])
        np.testing.assert_array_equal(ch.read(), arrays)
    ch = channel_at(NPZBlobChannel, tmp_path, "more", arrays)
    ch.consume(iter(arrays[:2]))
    ch.consume(iter(arrays[2:]), append=True)
    np.testing.assert_array_equal(ch.read(), arrays)
    pictures = images(4, 24, 32)
    jp = channel_at(JPEGBlobChannel, tmp_path, "jpg", pictures)
    jp.write(pictures)
    got = jp.read()
    assert got.shape == pictures.shape and np.abs(got.astype(int) - pictures.astype(int)).mean() < 3
    with pytest.raises(ValueError, match="one sample at a time"):
        channel_at(NPZBlobChannel, tmp_path, "batched", arrays).consume([arrays])


def test_consume_takes_queues_threads_and_a_producers_exception(tmp_path):
    data = (noise((7, 3)) * 100).astype(np.float32)
    q = queue.Queue()
    for s in data:
        q.put(s)
    q.put(None)
    ch = channel_at(RawChannel, tmp_path, "q", data)
    ch.consume(q)
    np.testing.assert_array_equal(ch.read(), data)
    lz = channel_at(LzmaFrameChannel, tmp_path, "lzq", data)
    q = queue.Queue()
    lz.consume(q, thread=True)  # returns at once; the thread writes until `None`
    for s in data:
        q.put(s)
    q.put(None)
    for _ in range(200):
        if os.path.exists(lz.path + "_i") and os.path.getsize(lz.path + "_i") == 8 * (len(data) + 1):
            break
        time.sleep(0.05)
    np.testing.assert_array_equal(lz.read(), data)
    q = queue.Queue()
    q.put(data[0])
    q.put(ExceptionSentinel(KeyError("the producer failed")))
    with pytest.raises(KeyError, match="the producer failed"):
        channel_at(RawChannel, tmp_path, "failed", data).consume(q)
    # Already batched streams (`batch=0`): each item a sequence of samples.
    lz2 = channel_at(LzmaFrameChannel, tmp_path, "batched", data)
    lz2.consume(batch_iterator(iter(data), 3), batch=0)
    np.testing.assert_array_equal(lz2.read(), data)
    assert list(Buffer(_filled([1, 2, None, 3]))) == [1, 2]
    assert list(Prefetch(iter(range(5)), size=2)) == list(range(5))


def _filled(items):
    q = queue.Queue()
    for x in items:
        q.put(x)
    return q


def test_bad_data_is_refused_naming_the_channel(tmp_path):
    data = np.zeros((2, 4, 5), np.float32)
    for cls in (RawChannel, LzmaFrameChannel, VideoChannel):
        ch = channel_at(cls, tmp_path, "bad_" + cls.__name__ + ".avi", data)
        with pytest.raises(ValueError, match="bad_" + cls.__name__):
            ch.write(np.zeros((2, 4, 6), np.float32))
        with pytest.raises(ValueError, match="type"):
            ch.write(np.zeros((2, 4, 5), np.float64))
    with pytest.raises(ValueError, match="bytes"):
        channel_at(LzmaFrameChannel, tmp_path, "b", data).write(b"\0" * 80)
    with pytest.raises(roverlog.FileError, match="nowhere"):
        channel_at(RawChannel, tmp_path / "nowhere", "x", data).write(data)


def test_a_sensor_created_as_upstream_reads_with_roverlog(tmp_path):
    path = str(tmp_path / "trace" / "imu")
    os.makedirs(os.path.dirname(path))
    (tmp_path / "trace" / "config.yaml").write_text("imu: {}\n")
    s = sensors.DynamicSensor(path, create=True)
    assert json.loads((tmp_path / "trace" / "imu" / "meta.json").read_text()) == {}
    n = 50
    ts = 1.7e9 + np.arange(n) / 100.0
    acc = (noise((n, 3)) * 10).astype(np.float32)
    rng = (noise((n, 8, 16)) * 60000).astype(np.uint16)
    s.create("ts", {"format": "raw", "type": "f8", "shape": [], "desc": "t"}).write(ts)
    s.create("acc", {"format": "raw", "type": "f4", "shape": [3], "desc": "a"}).consume(iter(acc))
    s.create("rng", {"format": "lzmaf", "type": "u2", "shape": [8, 16], "desc": "r"}).write(rng)
    meta = json.loads((tmp_path / "trace" / "imu" / "meta.json").read_text())
    assert list(meta) == ["ts", "acc", "rng"] and meta["rng"]["format"] == "lzmaf"
    assert roverlog._roverlog.check_sensor(path) == []
    ours = roverlog.Sensor(path)
    assert len(ours) == n
    np.testing.assert_array_equal(ours.timestamps, ts)
    np.testing.assert_array_equal(ours.channels["acc"].read(), acc)
    np.testing.assert_array_equal(ours.channels["rng"].read(), rng)
    again = sensors.DynamicSensor(path, create=True, exist_ok=True)
    np.testing.assert_array_equal(again[7]["rng"][0], rng[7])
    assert isinstance(again["acc"], channels.RawChannel)
