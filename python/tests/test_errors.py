"""What roverlog raises on bad files (issue 27): a `roverlog.Error` naming the file (and the
channel and sample), of the builtin class a caller without roverlog would catch."""
import json
import os
import shutil

import cv2
import numpy as np
import pytest

import roverlog
import roverlog.zarr
from roverlog.gulp import GulpDirectory

from conftest import images


def test_each_error_is_a_roverlog_error_and_the_builtin_it_was():
    for cls, builtin in [
        (roverlog.FileError, FileNotFoundError),
        (roverlog.ReadError, OSError),
        (roverlog.MissingKeyError, KeyError),
        (roverlog.SampleIndexError, IndexError),
        (roverlog.FormatError, ValueError),
    ]:
        assert issubclass(cls, roverlog.Error) and issubclass(cls, builtin), cls
    # KeyError quotes its argument; ours reads as the message.
    assert str(roverlog.MissingKeyError('d: no channel "x"')) == 'd: no channel "x"'


def _set_meta(root, sensor, channel, **changes):
    path = os.path.join(root, sensor, "meta.json")
    with open(path) as f:
        meta = json.load(f)
    meta[channel].update(changes)
    with open(path, "w") as f:
        json.dump(meta, f)
    return path


def test_a_channel_of_zero_sized_samples_names_its_meta_json(trace):
    # Core's rule (format::meta): such a sensor does not open, here as in the CLI.
    root, _ = trace
    meta = _set_meta(root, "imu", "acc", shape=[0])
    imu = os.path.join(root, "imu")
    desc = {"format": "raw", "type": "f4", "shape": [0]}
    for use in [lambda: roverlog.Trace(root), lambda: roverlog.Sensor(imu), lambda: roverlog.Channel(imu, "acc", desc)]:
        with pytest.raises(roverlog.FormatError) as e:
            use()
        assert meta in str(e.value) and '"acc"' in str(e.value) and "[0]" in str(e.value), str(e.value)


def test_meta_json_is_read_by_cores_rules(trace):
    root, _ = trace
    imu = os.path.join(root, "imu")
    path = os.path.join(imu, "meta.json")
    # Over core's size limit (1 MiB): refused before it is parsed.
    with open(path, "w") as f:
        f.write(" " * (1 << 20) + "{}")
    with pytest.raises(roverlog.FormatError, match="meta.json") as e:
        roverlog.Sensor(imu)
    assert path in str(e.value), str(e.value)
    # Not JSON; no `ts`; a description missing its shape: each names the file.
    for text, why in [("{not json", ""), ('{"acc": {"format": "raw", "type": "f4", "shape": [3]}}', 'no "ts" channel'),
                      ('{"ts": {"format": "raw", "type": "f8", "shape": []}, "acc": {"format": "raw", "type": "f4"}}',
                       'channel "acc": "shape" missing')]:
        with open(path, "w") as f:
            f.write(text)
        with pytest.raises(roverlog.FormatError) as e:
            roverlog.Sensor(imu)
        assert str(e.value).startswith(path) and why in str(e.value), str(e.value)
    # A type code with numpy's little-endian marker is core's `f4`.
    with open(path, "w") as f:
        json.dump({"ts": {"format": "raw", "type": "f8", "shape": []}, "acc": {"format": "raw", "type": "<f4", "shape": [3]}}, f)
    acc = roverlog.Sensor(imu).channels["acc"]
    assert acc.dtype == np.dtype("<f4") and acc.type == "<f4" and acc.shape == (3,)


@pytest.mark.parametrize("code", ["q9", "<q9"])
def test_an_unknown_type_code_names_the_file_and_channel(trace, code):
    root, _ = trace
    meta = _set_meta(root, "imu", "temp", type=code)
    with pytest.raises(roverlog.FormatError) as e:
        roverlog.Trace(root)
    assert isinstance(e.value, ValueError)
    assert meta in str(e.value) and '"temp"' in str(e.value) and f'"{code}"' in str(e.value)


def test_invalid_zarr_metadata_names_the_file(tmp_path):
    arr = tmp_path / "a"
    arr.mkdir()
    (arr / ".zarray").write_text("{not json")
    with pytest.raises(roverlog.FormatError, match=r"\.zarray") as e:
        roverlog.zarr.open(str(arr))
    assert str(arr) in str(e.value) and isinstance(e.value, ValueError)
    # Valid JSON that is not array metadata.
    (arr / ".zarray").write_text('{"zarr_format": 2}')
    with pytest.raises(roverlog.FormatError, match=str(arr)):
        roverlog.zarr.open(str(arr))
    with pytest.raises(roverlog.FileError, match="no .zarray or .zgroup"):
        roverlog.zarr.open(str(tmp_path / "missing"))
    # A group's missing member: a KeyError, as zarr-python's, naming the group and members.
    (tmp_path / ".zgroup").write_text('{"zarr_format": 2}')
    with pytest.raises(roverlog.MissingKeyError, match=f'{tmp_path}: no array or group "b"') as e:
        roverlog.zarr.open(str(tmp_path))["b"]
    assert isinstance(e.value, KeyError)


def test_zarr_attributes_are_read_by_cores_rules(tmp_path):
    (tmp_path / ".zgroup").write_text('{"zarr_format": 2}')
    g = roverlog.zarr.open(str(tmp_path))
    assert dict(g.attrs) == {}
    zattrs = tmp_path / ".zattrs"
    for text, why in [(" " * (1 << 20) + "{}", "limit"), ("[1, 2]", "not a JSON object"), ("{nope", "JSON")]:
        zattrs.write_text(text)
        g.attrs.refresh()
        with pytest.raises(roverlog.FormatError, match=why) as e:
            dict(g.attrs)
        assert str(zattrs) in str(e.value), str(e.value)
    zattrs.write_text('{"b": [1, {"c": null}], "a": 1.5}')
    g.attrs.refresh()
    assert g.attrs.asdict() == {"b": [1, {"c": None}], "a": 1.5} and list(g.attrs) == ["b", "a"]


def test_a_wrong_channel_or_sensor_name_says_where_and_what_exists(trace):
    root, _ = trace
    t = roverlog.Trace(root)
    imu = t["imu"]
    for get in [lambda: imu.channels["nope"], lambda: imu["nope"]]:
        with pytest.raises(roverlog.MissingKeyError) as e:
            get()
        assert isinstance(e.value, KeyError)
        assert str(e.value).startswith(f'{imu.path}: no channel "nope"') and '"acc"' in str(e.value)
    for get in [lambda: t.sensors["gps"], lambda: t["gps"]]:
        with pytest.raises(roverlog.MissingKeyError, match=f'{root}: no sensor "gps"'):
            get()
    # `in` and `.get` stay those of a dict.
    assert "nope" not in imu.channels and imu.channels.get("nope") is None


def test_the_package_and_the_native_library_quote_a_name_alike(trace):
    # Both quote as Rust's `{:?}` does (they quoted 'acc' and "rng" before).
    root, _ = trace
    imu = roverlog.Trace(root)["imu"]
    name = 'we"ird\tname\\'
    with pytest.raises(roverlog.MissingKeyError) as py:
        imu.channels[name]
    with pytest.raises(roverlog.MissingKeyError) as native:
        roverlog._roverlog.NativeChannel(imu.path, name)
    assert str(native.value) == f'{imu.path}: no channel "we\\"ird\\tname\\\\"', str(native.value)
    assert str(py.value).startswith(str(native.value) + " (channels: ["), str(py.value)


def test_a_file_or_missing_directory_is_not_a_trace_and_says_so(tmp_path):
    f = tmp_path / "passwd"
    f.write_text("root:x:0:0\n")
    with pytest.raises(roverlog.FileError, match=f"{f}: a file, not a trace directory") as e:
        roverlog.Trace(str(f))
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(roverlog.FileError, match="no such trace directory"):
        roverlog.Trace(str(tmp_path / "missing"))
    sensor = tmp_path / "s"
    sensor.mkdir()
    with pytest.raises(roverlog.FileError, match=str(sensor / "meta.json")):
        roverlog.Sensor(str(sensor))


def _cut(jpeg):
    """The first half of `jpeg`: as a crash or a partial copy leaves it."""
    cut = jpeg[: len(jpeg) // 2]
    assert cut.rstrip(b"\0")[-2:] != b"\xff\xd9"
    return cut


@pytest.mark.usefixtures("each_jpeg_decoder")
def test_a_truncated_jpeg_names_the_channel_and_sample(trace):
    root, truth = trace
    img = roverlog.Trace(root)["camera"].channels["img"]
    with open(os.path.join(img.path, "000005.jpg"), "wb") as f:
        f.write(_cut(truth["camera"]["img.jpeg"][5]))
    for read in [img.read, lambda: img[5], lambda: img[3:8]]:
        with pytest.raises(roverlog.FormatError) as e:
            read()
        assert f"{img.path}: sample 5: jpeg: truncated" in str(e.value), str(e.value)
    # The other samples still decode, and the bytes are still there to look at.
    assert img[4].shape == (48, 64, 3)
    assert img.read(5, 1, decode=False)[0] == _cut(truth["camera"]["img.jpeg"][5])


def test_a_missing_blob_channel_directory_is_a_file_not_found_error(trace):
    root, _ = trace
    img = roverlog.Trace(root)["camera"].channels["img"]
    shutil.rmtree(img.path)
    for use in [lambda: img[0], img.read]:
        with pytest.raises(roverlog.FileError) as e:
            use()
        assert isinstance(e.value, FileNotFoundError) and img.path in str(e.value), str(e.value)


@pytest.mark.usefixtures("each_jpeg_decoder")
def test_a_truncated_gulp_frame_names_the_directory_id_and_frame(tmp_path):
    frames = []
    for im in images(2):
        ok, b = cv2.imencode(".jpg", im)
        assert ok
        frames.append(b.tobytes())
    frames[1] = _cut(frames[1])
    data, info = b"", []
    for f in frames:
        pad = -len(f) % 4
        info.append([len(data), pad, len(f) + pad])
        data += f + b"\0" * pad
    d = tmp_path / "g"
    d.mkdir()
    (d / "data_0.gulp").write_bytes(data)
    (d / "meta_0.gmeta").write_text(json.dumps({"v": {"frame_info": info, "meta_data": [{}]}}))
    g = GulpDirectory(str(d))
    assert g["v", [0]][0][0].shape == (48, 64, 3)
    with pytest.raises(roverlog.FormatError) as e:
        g["v"]
    assert str(d) in str(e.value) and "id \"v\": frame 1: jpeg: truncated" in str(e.value), str(e.value)
    with pytest.raises(roverlog.MissingKeyError, match=f'{d}: no id "w"'):
        g["w"]
