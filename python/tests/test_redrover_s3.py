"""`roverlog.redrover` (upstream roverd's API) on `s3://` traces, against a real S3 server
(Garage on 127.0.0.1, as test_remote_s3.py starts it, one for the module; each trace
uploaded once by `roverlog offload`): every sensor type, channel format and `Dataset` reads as the local copy
does; a dataset pickles into spawned worker processes and gives the same items there; one
random camera frame (a 1080p MJPEG AVI) or `lzmaf` frame costs at most 3 GETs and its own
bytes + 128 KiB once its channel is open (issue 34), counted by the store handle's
request counters; writing to s3 is refused naming the path."""
import dataclasses
import io
import json
import multiprocessing
import os
import pickle
import subprocess

import numpy as np
import pytest
from abstract_dataloader import generic

import roverlog
from roverlog import redrover as roverd
from roverlog import remote
from roverlog.redrover import sensors as S

from conftest import depth_frames, os1_128_metadata, write_channel, write_rover, write_trace
from test_remote_s3 import running_garage

KIB = 1024


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory):
    """One Garage server for the module (a start costs seconds); its `AWS_*` variables set,
    and nothing else of `AWS_*`, while the module runs."""
    with running_garage(tmp_path_factory.mktemp("s3") / "garage") as env, pytest.MonkeyPatch.context() as mp:
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            mp.delenv(k)
        for k, v in env.items():
            mp.setenv(k, v)
        yield env


def offload(root, tmp_path, dest="s3://traces"):
    """`roverlog offload root dest`; the trace's URL."""
    binary = os.environ.get("ROVERLOG_BIN")
    assert binary, "ROVERLOG_BIN is not set: run these tests through `cargo test --test python`"
    journal = tmp_path / f"journal-{os.path.basename(root)}.json"
    out = subprocess.run([binary, "offload", root, dest, "--journal", str(journal)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return f"{dest}/{os.path.basename(root)}"


@pytest.fixture(scope="module")
def s3_trace(s3_env, tmp_path_factory):
    """conftest's trace of every channel format on `s3://traces/trace`: (url, root)."""
    d = tmp_path_factory.mktemp("trace")
    root = str(d / "trace")
    write_trace(root)
    return offload(root, d), root


@pytest.fixture(scope="module")
def s3_rover(s3_env, tmp_path_factory):
    """conftest's red-rover trace (every typed sensor) on `s3://traces/rover`: (url, root)."""
    d = tmp_path_factory.mktemp("rover")
    root = str(d / "rover")
    write_rover(root)
    return offload(root, d), root


def same(ours, theirs, where=""):
    """Equal samples: arrays of the same dtype and values, dicts and sample dataclasses field
    by field (a lidar's `intrinsics`, a path or a URL, by its file name)."""
    if dataclasses.is_dataclass(ours):
        assert type(ours) is type(theirs), where
        for f in dataclasses.fields(ours):
            a, b = getattr(ours, f.name), getattr(theirs, f.name)
            if f.name == "intrinsics":
                assert os.path.basename(a) == os.path.basename(b), where
            else:
                same(a, b, f"{where}.{f.name}")
    elif isinstance(ours, dict):
        assert list(ours) == list(theirs), where
        for k in ours:
            same(ours[k], theirs[k], f"{where}[{k}]")
    else:
        assert isinstance(ours, (np.ndarray, np.generic)) and type(ours) is type(theirs), (where, type(ours), type(theirs))
        assert ours.dtype == theirs.dtype, (where, ours.dtype, theirs.dtype)
        np.testing.assert_array_equal(ours, theirs, err_msg=where)


def same_outcome(url, root, read, ours, theirs, where):
    """`read(ours)` as `read(theirs)`: the same samples, or the same error naming the same
    file (the URL for the local path) and sample (the reason worded by each reader)."""
    try:
        want = read(theirs)
    except roverlog.Error as e:
        with pytest.raises(type(e)) as got:
            read(ours)
        assert str(got.value).split(": ")[:2] == str(e).replace(root, url).split(": ")[:2], (where, str(got.value))
        return
    same(read(ours), want, where)


KINDS = {
    "radar": "radar", "lidar": S.OSLidar, "camera": "camera", "jpgcam": lambda p: S.Camera(p, key="image"),
    "_camera": "_camera", "imu": "imu", "pose": "pose",
}


def test_every_sensor_type_reads_as_the_local_copy(s3_rover):
    url, root = s3_rover
    remote_t = roverd.Trace.from_config(url, sensors=KINDS)
    local_t = roverd.Trace.from_config(root, sensors=KINDS)
    assert roverd.Trace.find_sensors(url) == sorted(roverd.Trace.find_sensors(root))
    assert roverd.Trace.find_sensors(url, virtual=True) == sorted(roverd.Trace.find_sensors(root, virtual=True))
    for name in KINDS:
        r, l = remote_t[name], local_t[name]
        assert type(r) is type(l) and len(r) == len(l), name
        same(r.metadata.timestamps, l.metadata.timestamps, f"{name}.timestamps")
        n = len(l.metadata.timestamps)
        for i in (0, 1, n // 2, n - 2):
            same(r[i], l[i], f"{name}[{i}]")
        if name != "pose":
            assert r.filesize == l.filesize > 0, name
    same(remote_t["radar"].metadata.range_resolution, local_t["radar"].metadata.range_resolution)
    assert remote_t["lidar"].metadata.intrinsics == f"{url}/lidar/lidar.json"
    same(remote_t["lidar"].points(3), local_t["lidar"].points(3), "lidar.points(3)")
    assert remote_t.filesize == sum(local_t[k].filesize for k in KINDS if k != "pose")
    # The IMU's `avel` lost its last sample in a power cut: the same error, naming the URL.
    imu_r, imu_l = S.DynamicSensor(f"{url}/imu"), S.DynamicSensor(os.path.join(root, "imu"))
    n = len(imu_l.channels["avel"])
    with pytest.raises(roverlog.DamagedSampleError):
        imu_l.channels["avel"].read(n - 2, 5)
    same_outcome(url, root, lambda s: s.channels["avel"].read(n - 2, 5), imu_r, imu_l, "imu/avel past its end")
    same(imu_r.channels["avel"].read(n - 2, 2), imu_l.channels["avel"].read(n - 2, 2), "imu/avel to its end")
    synced = {k: KINDS[k] for k in ("radar", "lidar", "camera", "imu")}
    rs = roverd.Trace.from_config(url, sync=generic.Nearest("lidar", tol=0.1), sensors=synced)
    ls = roverd.Trace.from_config(root, sync=generic.Nearest("lidar", tol=0.1), sensors=synced)
    assert len(rs) == len(ls) > 0
    for i in (0, len(ls) // 3, len(ls) - 1):
        same(rs[i], ls[i], f"trace[{i}]")


def test_every_channel_format_reads_as_the_local_copy(s3_trace):
    """raw, lzmaf, lzma, mjpg, jpg and npz channels through DynamicSensor: `read()`, a read
    past the end, indexing, `stream` (one at a time and in batches), lengths and sizes."""
    url, root = s3_trace
    remote_t = roverd.Trace.from_config(url, include_virtual=True)
    local_t = roverd.Trace.from_config(root, include_virtual=True)
    assert sorted(remote_t.sensors) == sorted(local_t.sensors)
    formats = set()
    for name, l in local_t.sensors.items():
        r = remote_t[name]
        assert len(r) == len(l), name
        for ch, lc in l.channels.items():
            rc, where = r.channels[ch], f"{name}/{ch}"
            formats.add(lc.format)
            assert type(rc) is type(lc) and len(rc) == len(lc), where
            assert rc.filesize == lc.filesize, where
            n = len(lc)
            same(rc.read(), lc.read(), where)
            same(rc[n // 2], lc[n // 2], f"{where}[{n // 2}]")
            same(rc.read(2, 5), lc.read(2, 5), f"{where}.read(2, 5)")
            same(rc.read(n - 2, 5), lc.read(n - 2, 5), f"{where}.read({n - 2}, 5)")  # what exists
            for got, want in zip(rc.stream(), lc.stream(), strict=True):
                same(got, want, f"{where}.stream()")
            for got, want in zip(rc.stream(batch=4), lc.stream(batch=4), strict=True):
                same(got, want, f"{where}.stream(batch=4)")
            with pytest.raises(roverlog.SampleIndexError, match=f"{url}/{name}/{ch}"):
                rc.read(n + 3, 1)
        same(r[3], l[3], f"{name}[3]")
    assert formats == {"raw", "lzmaf", "lzma", "mjpg", "jpg", "npz"}


def flat(item):
    """A dataset item as `{sensor: {field: array}}` (the lidar's intrinsics by file name):
    what a worker hands back."""
    out = {}
    for k, v in item.items():
        fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
        fields["intrinsics"] = os.path.basename(fields.get("intrinsics", ""))
        out[k] = fields
    return out


def _items(args):
    dataset, indices = args
    return [flat(dataset[i]) for i in indices]


DATASET_KINDS = {"radar": S.XWRRadar, "lidar": S.OSLidar, "camera": S.Camera, "imu": S.IMU}


def test_a_dataset_of_s3_traces_pickles_into_spawned_workers(s3_rover, tmp_path):
    _, root = s3_rover
    second = str(tmp_path / "more" / "rover2")
    write_rover(second, seed=1, seconds=12.0)
    url = offload(root, tmp_path, "s3://traces/fleet")
    url2 = offload(second, tmp_path, "s3://traces/fleet/more")
    found = roverd.Dataset.find_traces("s3://traces/fleet")
    assert found == [url2, url]
    sync = generic.Nearest("lidar", tol=0.1)
    ds = roverd.Dataset.from_config(found, sync=sync, sensors=DATASET_KINDS, workers=2)
    local = roverd.Dataset.from_config([second, root], sync=sync, sensors=DATASET_KINDS)
    assert len(ds) == len(local) > 0
    picks = [0, 5, len(ds) // 2, len(ds) - 1, 17, 3]
    for i in picks[:2]:
        same(ds[i], local[i], f"dataset[{i}]")  # opened here first: each worker opens its own
    again = pickle.loads(pickle.dumps(ds))
    same(again[picks[2]], local[picks[2]], "unpickled")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(_items, [(ds, picks[:3]), (ds, picks[3:])], chunksize=1)
    got = [x for part in got for x in part]
    for i, item in zip(picks, got):
        for k, fields in flat(local[i]).items():
            for f, want in fields.items():
                if isinstance(want, str):
                    assert item[k][f] == want
                else:
                    same(item[k][f], want, f"worker dataset[{i}][{k}].{f}")


def write_big(root, frames=8):
    """A trace with a 1080p MJPEG camera and an OS1-128 lidar's `lzmaf` ranges (2048
    columns), as upstream writes them."""
    os.makedirs(root)
    with open(os.path.join(root, "config.yaml"), "w") as f:
        f.write("camera: {}\nlidar: {}\n")
    rng = np.random.default_rng(9)
    y, x = np.mgrid[0:1080, 0:1920]
    video = np.empty((frames, 1080, 1920, 3), np.uint8)
    for i in range(frames):
        base = np.stack([(x // 3 + 7 * i) % 256, (y // 2 + 5 * i) % 256, ((x + y) // 5 + i) % 256], axis=-1)
        video[i] = np.clip(base + rng.integers(-12, 13, base.shape), 0, 255)
    chans = {
        "camera": [("video.avi", "mjpg", "u1", video, 15.0)],
        "lidar": [("rng", "lzmaf", "u2", depth_frames(frames), 10.0)],
    }
    for name, cs in chans.items():
        d = os.path.join(root, name)
        os.makedirs(d)
        ts = 1.7e9 + np.arange(frames) / cs[0][4]
        ts.astype("<f8").tofile(os.path.join(d, "ts"))
        meta = {"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "t"}}
        for cname, fmt, typ, data, rate in cs:
            meta[cname] = {"format": fmt, "type": typ, "shape": list(data.shape[1:]), "desc": cname}
            write_channel(os.path.join(d, cname), fmt, typ, data, rate)
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
    with open(os.path.join(root, "lidar", "lidar.json"), "w") as f:
        json.dump(os1_128_metadata(), f)


def cost(url, read):
    """`read()`, and the GETs and bytes it cost (no listing, no HEAD)."""
    before = remote.requests(url)
    out = read()
    after = remote.requests(url)
    assert (after["lists"], after["heads"]) == (before["lists"], before["heads"])
    return out, after["gets"] - before["gets"], after["got_bytes"] - before["got_bytes"]


def test_a_random_frame_costs_at_most_3_gets_and_its_size_plus_128_kib(s3_env, tmp_path):
    root = str(tmp_path / "big")
    write_big(root)
    url = offload(root, tmp_path)
    jpeg = [len(b) for b in roverlog.Sensor(os.path.join(root, "camera")).channels["video.avi"].read(decode=False)]
    lzmaf = np.diff(np.fromfile(os.path.join(root, "lidar", "rng_i"), "<u8"))
    assert min(jpeg) > 128 * KIB and min(lzmaf) > 128 * KIB  # frames of the size the promise is about
    cam, lidar = S.Camera(f"{url}/camera"), S.OSLidarDepth(f"{url}/lidar")
    local_cam, local_lidar = S.Camera(os.path.join(root, "camera")), S.OSLidarDepth(os.path.join(root, "lidar"))
    assert cam[0].image.shape == (1, 1, 1080, 1920, 3)  # opens the channel (its header and idx1)
    lidar[0]  # opens the channel (its `_i`)
    worst = []
    for i in np.random.default_rng(5).permutation(len(jpeg))[:5]:
        got, gets, n = cost(url, lambda: cam[int(i)])
        assert gets <= 3 and n <= jpeg[i] + 128 * KIB, f"camera frame {i} ({jpeg[i]} bytes): {gets} GETs, {n} bytes"
        same(got, local_cam[int(i)], f"camera[{i}]")
        worst.append(("mjpg", gets, n - jpeg[i]))
        got, gets, n = cost(url, lambda: lidar[int(i)])
        assert gets <= 3 and n <= lzmaf[i] + 128 * KIB, f"lidar frame {i} ({lzmaf[i]} bytes): {gets} GETs, {n} bytes"
        same(got, local_lidar[int(i)], f"lidar[{i}]")
        worst.append(("lzmaf", gets, n - lzmaf[i]))
    # Through a dataset, as a DataLoader reads: the two frames of an item.
    ds = roverd.Dataset.from_config([url], sync=generic.Nearest("camera", tol=0.05),
                                    sensors={"camera": S.Camera, "lidar": S.OSLidarDepth})
    local = roverd.Dataset.from_config([root], sync=generic.Nearest("camera", tol=0.05),
                                       sensors={"camera": S.Camera, "lidar": S.OSLidarDepth})
    ds[0]
    k = len(ds) - 2
    got, gets, n = cost(url, lambda: ds[k])
    idx = ds.traces[0].indices
    own = jpeg[idx["camera"][k]] + lzmaf[idx["lidar"][k]]
    assert gets <= 6 and n <= own + 2 * 128 * KIB, f"dataset[{k}] ({own} bytes of frames): {gets} GETs, {n} bytes"
    same(got, local[k], f"dataset[{k}]")
    print("per frame (format, GETs, bytes over the frame's own):", worst, "dataset item:", gets, n - own)


def test_writing_to_s3_is_refused_naming_the_path(s3_rover):
    url, _ = s3_rover
    imu = S.DynamicSensor(f"{url}/imu")
    lidar = S.DynamicSensor(f"{url}/lidar")
    cam = S.DynamicSensor(f"{url}/camera")
    jpg = S.DynamicSensor(f"{url}/jpgcam")
    frames = np.zeros((2, 24, 32, 3), np.uint8)
    acc = imu.channels["acc"]
    samples, ranges = acc.read(0, 2), lidar.channels["rng"].read(0, 1)
    writes = [
        (f"{url}/imu/acc", "RawChannel.write()", lambda: acc.write(samples)),
        (f"{url}/imu/acc", "RawChannel.consume()", lambda: acc.consume(iter([]))),
        (f"{url}/imu/acc", "RawChannel.memmap()", acc.memmap),
        (f"{url}/lidar/rng", "LzmaFrameChannel.write()", lambda: lidar.channels["rng"].write(ranges)),
        (f"{url}/lidar/nir", "LzmaChannel.write()", lambda: lidar.channels["nir"].write(b"")),
        (f"{url}/camera/video.avi", "VideoChannel.consume()", lambda: cam.channels["video.avi"].consume(iter(frames))),
        (f"{url}/jpgcam/image", "JPEGBlobChannel.write()", lambda: jpg.channels["image"].write(frames)),
        (f"{url}/imu", "DynamicSensor.create()", lambda: imu.create("new", {"format": "raw", "type": "u1", "shape": []})),
        (f"{url}/new", "DynamicSensor(create=True)", lambda: S.DynamicSensor(f"{url}/new", create=True)),
    ]
    before = remote.requests(url)
    for path, what, write in writes:
        with pytest.raises(io.UnsupportedOperation) as e:
            write()
        assert str(e.value).startswith(f"{path}: {what} on object storage is not supported"), str(e.value)
        assert "roverlog offload" in str(e.value)
    assert remote.requests(url) == before  # refused before anything was sent
    assert "new" not in imu.channels and "new" not in roverd.Trace.find_sensors(url)


def test_missing_buckets_traces_and_sensors_are_errors_naming_them(s3_rover):
    url, _ = s3_rover
    with pytest.raises(roverlog.FileError, match='bucket "nosuchbucket" does not exist at http://127.0.0.1'):
        roverd.Trace.from_config("s3://nosuchbucket/rover")
    with pytest.raises(roverlog.FileError, match="s3://traces/nosuchtrace at http://127.0.0.1.*no trace there"):
        roverd.Trace.from_config("s3://traces/nosuchtrace", sensors={"radar": "radar"})
    with pytest.raises(roverlog.FormatError, match=f"{url}/sonar/meta.json: no such file"):
        S.XWRRadar(f"{url}/sonar")
    with pytest.raises(roverlog.FileError, match="not a path inside a trace"):
        S.XWRRadar("s3://traces")
    assert roverd.Dataset.find_traces("s3://traces/nothing/here") == []
