"""roverlog.redrover (upstream roverd's reading API): traces, datasets, synchronisation and
the sample form, against abstract-dataloader's own `generic.Nearest` and what was written."""
import json
import os
import pickle

import numpy as np
import pytest
from abstract_dataloader import abstract, generic

import roverlog
from roverlog import redrover as roverd

from conftest import N, opencv_frames, write_rover
from test_redrover_sensors import close_px


def untrimmed_nearest(timestamps, reference, tol):
    """Nearest over every reference sample, without cutting to the common span: what
    roverlog.Nearest did before (issue 27: 599 where generic.Nearest gives 597)."""
    ref = timestamps[reference]
    idx = {k: np.searchsorted((t[:-1] + t[1:]) / 2, ref) for k, t in timestamps.items()}
    ok = np.all([np.abs(timestamps[k][i] - ref) < tol for k, i in idx.items()], axis=0)
    return int(ok.sum())


def sync_cases():
    rng = np.random.default_rng(7)
    ref = 1.7e9 + np.arange(600) / 10 + rng.uniform(0, 0.01, 600)
    # Starts 0.15 s later and stops 0.12 s earlier than the reference.
    late = 1.7e9 + 0.15 + np.arange(5970) / 100 - 0.12 + rng.uniform(0, 0.002, 5970)
    late = late[(late > ref[0] + 0.15) & (late < ref[-1] - 0.12)]
    fast = 1.7e9 - 1 + np.arange(20000) / 300 + rng.uniform(0, 0.001, 20000)
    return {"ref": ref, "late": late, "fast": fast}


@pytest.mark.parametrize("margin", [{}, (0, 0), (2, 3), (0.5, 1.25), [1, 0.3], {"late": (0.2, 4)}, {"ref": (3, 0.0), "fast": (0.0, 10)}])
@pytest.mark.parametrize("tol", [0.1, 0.004, np.inf])
def test_nearest_gives_the_indices_of_abstract_dataloaders_nearest(margin, tol):
    ts = sync_cases()
    theirs = generic.Nearest("ref", margin=margin, tol=tol)(ts)
    ours = roverlog.Nearest("ref", margin=margin, tol=tol)(ts)
    assert list(ours) == list(theirs)
    for k in ours:
        assert ours[k].dtype == theirs[k].dtype == np.uint32
        np.testing.assert_array_equal(ours[k], theirs[k], err_msg=k)
    again = pickle.loads(pickle.dumps(roverlog.Nearest("ref", margin=margin, tol=tol)))(ts)
    for k in ours:
        np.testing.assert_array_equal(again[k], ours[k])


def test_nearest_cuts_to_the_span_every_sensor_covers():
    ts = sync_cases()
    ours = roverlog.Nearest("ref", tol=0.1)(ts)
    n = len(ours["ref"])
    assert n == len(generic.Nearest("ref", tol=0.1)(ts)["ref"])
    assert n < untrimmed_nearest(ts, "ref", 0.1)  # the reference's ends outside "late" are cut
    t = ts["ref"][ours["ref"]]
    assert t[0] >= ts["late"][0] and t[-1] <= ts["late"][-1]
    with pytest.raises(TypeError, match="margin"):
        roverlog.Nearest("ref", 0.1)
    with pytest.raises(TypeError, match="margin"):
        roverlog.Nearest("ref", margin=(1, 2, 3))
    with pytest.raises(KeyError, match="nope"):
        roverlog.Nearest("nope")(ts)


def test_trace_from_config_matches_abstract_dataloaders_trace_and_the_written_data(trace):
    root, truth = trace
    sync = generic.Nearest("lidar", tol=0.02)
    t = roverd.Trace.from_config(root, sync=sync)
    assert isinstance(t, abstract.Trace)
    assert sorted(roverd.Trace.find_sensors(root)) == ["camera", "imu", "lidar", "video"]
    assert list(t.sensors) == roverd.Trace.find_sensors(root)  # directory order, as upstream
    want = sync({k: truth[k]["ts"] for k in t.sensors})
    assert list(t.indices) == list(want)
    for k in want:
        np.testing.assert_array_equal(t.indices[k], want[k])
    assert len(t) == len(want["lidar"]) > 0
    assert repr(t) == f"Trace({root}, {len(t)}x[{', '.join(t.sensors)}])"
    for i in (0, len(t) - 1):
        sample = t[i]
        assert list(sample) == list(t.sensors)
        for s, chans in sample.items():
            j = int(want[s][i])
            assert list(chans) == list(t[s].config)  # every channel, `ts` included
            for c, got in chans.items():
                w = truth[s][c][j]
                assert got.shape == (1, *np.shape(w)), (s, c)
                if c in ("img", "video.avi"):
                    close_px(got[0], opencv_frames(os.path.join(root, s, c))[j])
                else:
                    np.testing.assert_array_equal(got[0], w, err_msg=f"{s}/{c}")
    # The default synchronisation is abstract-dataloader's Empty: no samples, sensors by name.
    empty = roverd.Trace.from_config(root)
    assert len(empty) == 0 and isinstance(empty["imu"], roverd.sensors.DynamicSensor)
    assert repr(empty["imu"]) == f"DynamicSensor({os.path.join(root, 'imu')}: [{', '.join(empty['imu'].config)}])"
    # Indices given as a mapping are used as they are; None means already in step.
    given = roverd.Trace(sensors=t.sensors, sync={k: np.array([3, 1]) for k in t.sensors})
    np.testing.assert_array_equal(given[1]["imu"]["acc"][0], truth["imu"]["acc"][1])
    flat = roverd.Trace(sensors={"imu": t["imu"], "lidar": t["lidar"]}, sync=None)
    assert len(flat) == N and flat.indices is None
    np.testing.assert_array_equal(flat[4]["lidar"]["rng"][0], truth["lidar"]["rng"][4])


def test_sensor_types_by_name_constructor_instance_or_auto(rover):
    root, _ = rover
    radar = roverd.sensors.XWRRadar(os.path.join(root, "radar"))
    t = roverd.Trace.from_config(root, sensors={
        "radar": radar, "lidar": "auto", "imu": roverd.sensors.IMU, "camera": None,
        "jpgcam": lambda p: roverd.sensors.Camera(p, key="image"), "_camera": "_camera",
    })
    assert t["radar"] is radar
    assert type(t["lidar"]) is roverd.sensors.OSLidarDepth
    assert type(t["imu"]) is roverd.sensors.IMU
    assert type(t["camera"]) is roverd.sensors.DynamicSensor
    assert type(t["jpgcam"]) is roverd.sensors.Camera
    assert type(t["_camera"]) is roverd.sensors.Semseg
    assert "_camera" not in roverd.Trace.find_sensors(root)
    assert "_camera" in roverd.Trace.find_sensors(root, virtual=True)
    assert "_camera" in roverd.Trace.from_config(root, include_virtual=True).sensors
    with pytest.raises(ValueError, match="unknown sensor type 'sonar'"):
        roverd.Trace.from_config(root, sensors={"radar": "sonar"})
    with pytest.raises(FileNotFoundError, match="no such trace"):
        roverd.Trace.from_config(os.path.join(root, "nope"))


def test_a_dataset_of_traces_indexes_them_one_after_another(tmp_path):
    roots = [str(tmp_path / "a" / "t1"), str(tmp_path / "a" / "deeper" / "t2"), str(tmp_path / "b")]
    truths = [write_rover(r, seed=i, seconds=12.0 + 4 * i) for i, r in enumerate(roots)]
    os.makedirs(os.path.join(roots[0], "nested"))  # inside a trace: not searched
    with open(os.path.join(roots[0], "nested", "config.yaml"), "w") as f:
        f.write("{}\n")
    found = roverd.Dataset.find_traces(str(tmp_path / "a"), str(tmp_path / "b"))
    assert sorted(found) == sorted(roots)
    sync = generic.Nearest("lidar", tol=0.1)
    kinds = {"radar": roverd.sensors.XWRRadar, "lidar": roverd.sensors.OSLidar}
    ds = roverd.Dataset.from_config(found, sync=sync, sensors=kinds)
    par = roverd.Dataset.from_config(found, sync=sync, sensors=kinds, workers=-1)
    assert isinstance(ds, abstract.Dataset)
    lengths = [len(sync({k: truths[roots.index(p)][k]["ts"] for k in kinds})["lidar"]) for p in found]
    assert len(ds) == len(par) == sum(lengths) > 0
    assert repr(ds) == f"Dataset(3 traces, n={sum(lengths)})"
    start = 0
    for p, n in zip(found, lengths):
        t = roverd.Trace.from_config(p, sync=sync, sensors=kinds)
        for i in (0, n - 1):
            a, b = ds[start + i], t[i]
            np.testing.assert_array_equal(a["lidar"].rng, b["lidar"].rng)
            np.testing.assert_array_equal(a["radar"].iq, b["radar"].iq)
            np.testing.assert_array_equal(par[start + i]["radar"].timestamps, b["radar"].timestamps)
        start += n
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_split_takes_a_fraction_of_each_trace(rover, tmp_path):
    root, _ = rover
    t = roverd.Trace.from_config(root, sync=generic.Nearest("radar", tol=0.1), sensors={"radar": "radar", "lidar": "lidar"})
    n = len(t)
    part = roverd.split(t, start=0.25, end=0.5)
    assert len(part) == int(n * 0.5) - int(n * 0.25)
    for k in t.indices:
        np.testing.assert_array_equal(part.indices[k], t.indices[k][int(n * 0.25):int(n * 0.5)])
    np.testing.assert_array_equal(part[0]["radar"].iq, t[int(n * 0.25)]["radar"].iq)
    unsynced = roverd.Trace(sensors={"radar": t["radar"]}, sync=None)
    half = roverd.split(unsynced, 0.0, 0.5)
    np.testing.assert_array_equal(half.indices["radar"], np.arange(len(t["radar"]) // 2))
    ds = roverd.split(roverd.Dataset([t, t]), 0.5, 1.0)
    assert isinstance(ds, roverd.Dataset) and len(ds) == 2 * (n - int(n * 0.5))
    for bad in [(0.5, 0.5), (-0.1, 0.5), (0.2, 1.1)]:
        with pytest.raises(ValueError, match="split range"):
            roverd.split(t, *bad)


def disk_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def test_filesize_and_datarate_count_every_channel_file(trace):
    root, truth = trace
    t = roverd.Trace.from_config(root)
    total = 0
    for s in t.sensors:
        d = os.path.join(root, s)
        with open(os.path.join(d, "meta.json")) as f:
            names = json.load(f)
        want = sum(disk_bytes(os.path.join(d, c)) for c in names)  # lzmaf: the data, not `_i`
        assert t[s].filesize == want, s
        ts = truth[s]["ts"]
        assert t[s].datarate == pytest.approx(want / (ts[-1] - ts[0]), rel=1e-12)
        total += want
    assert t.filesize == total
    assert t.datarate == pytest.approx(sum(t[s].datarate for s in t.sensors))


def test_traces_pickle_for_dataloader_workers(rover):
    root, _ = rover
    t = roverd.Trace.from_config(root, sync=generic.Nearest("lidar", tol=0.1), sensors={"lidar": "auto", "camera": "auto"})
    again = pickle.loads(pickle.dumps(t))
    assert len(again) == len(t)
    np.testing.assert_array_equal(again[5]["camera"].image, t[5]["camera"].image)
    np.testing.assert_array_equal(again[5]["lidar"].rng, t[5]["lidar"].rng)


def test_the_old_reader_is_unchanged(trace):
    """`roverlog.Trace` keeps its own API beside the upstream one."""
    root, truth = trace
    t = roverlog.Trace(root, sync=roverlog.Nearest("lidar", tol=0.02))
    assert len(t) == len(generic.Nearest("lidar", tol=0.02)({k: truth[k]["ts"] for k in t.sensors})["lidar"])


def test_the_examples_in_upstreams_docs_run(rover, tmp_path):
    """The four examples of upstream roverd's package docstring, with its import changed:
    dataset, typed trace, untyped trace, single sensor; their reprs and sample types."""
    from roverlog.redrover import Dataset, Trace, sensors

    root, truth = rover
    dataset = Dataset.from_config(
        Dataset.find_traces(os.path.dirname(root)),
        sync=generic.Nearest("lidar", tol=0.1),
        sensors={"radar": sensors.XWRRadar, "lidar": sensors.OSLidar})
    assert repr(dataset) == f"Dataset(1 traces, n={len(dataset)})" and len(dataset) > 42
    assert [type(v).__name__ for v in dataset[42].values()] == ["XWRRadarIQ", "OSData"]
    trace = Trace.from_config(root, sync=generic.Nearest("lidar"), sensors={"radar": sensors.XWRRadar, "lidar": sensors.OSLidar})
    assert repr(trace["radar"]) == f"XWRRadar({root}/radar: [ts, iq, valid])"
    assert [type(v).__name__ for v in trace[42].values()] == ["XWRRadarIQ", "OSData"]
    untyped = Trace.from_config(root, sync=generic.Nearest("lidar"))
    assert repr(untyped) == f"Trace({root}, {len(untyped)}x[{', '.join(untyped.sensors)}])"
    assert repr(untyped["radar"]) == f"DynamicSensor({root}/radar: [ts, iq, valid])"
    assert all(isinstance(v, dict) for v in untyped[42].values())
    radar = sensors.XWRRadar(os.path.join(root, "radar"))
    assert len(radar) == len(truth["radar"]["ts"])
    s = radar[42]
    assert (s.iq.dtype, s.iq.shape[:2], s.timestamps.shape, s.valid.shape) == (np.int16, (1, 1), (1, 1), (1, 1))
    assert s.range_resolution.shape == s.doppler_resolution.shape == (1,)


def test_a_video_channel_with_fps_in_its_args_opens(trace):
    """roverlog before 2026-11-26 kept the AVI header's `fps` in a converted or imported
    video channel's `args` (now left out of `meta.json`); upstream's VideoChannel raises
    TypeError on it, ours takes it, so such traces still open."""
    root, truth = trace
    path = os.path.join(root, "video", "meta.json")
    with open(path) as f:
        meta = json.load(f)
    meta["video.avi"]["args"] = {"fps": 30.0}
    with open(path, "w") as f:
        json.dump(meta, f)
    s = roverd.sensors.DynamicSensor(os.path.join(root, "video"))
    assert s.channels["video.avi"].fps == 30.0
    frame = s[3]["video.avi"]
    assert frame.shape == (1, 48, 64, 3)
    np.testing.assert_array_equal(frame[0], roverlog.Trace(root)["video"].channels["video.avi"][3])
