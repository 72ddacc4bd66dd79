"""No silent empty sample from the typed sensors (issue 36): a raw radar file cut inside a
sample (what a crash leaves) makes `XWRRadar[i]`, its windows and `DynamicSensor[i]` raise
the `roverlog.DamagedSampleError` the channel raises, naming the file and the first sample
missing, where they returned an empty `(1, 0, ...)` window; samples before the cut read as
written."""
import multiprocessing
import os

import numpy as np
import pytest

import roverlog
from roverlog.redrover import sensors


def cut_inside(path, sample, sample_bytes):
    """Cuts the file in the middle of `sample`."""
    with open(path, "r+b") as f:
        f.truncate(sample * sample_bytes + sample_bytes // 2)


def _read_radar(args):
    path, index = args
    return sensors.XWRRadar(path)[index].iq.sum()


def assert_names(err, path, index):
    assert isinstance(err, roverlog.DamagedSampleError)
    assert (err.path, err.index) == (path, index)
    assert path in str(err) and f"sample {index} is damaged" in str(err), str(err)


def test_a_radar_cut_inside_a_sample_raises_naming_the_file_and_sample(rover):
    root, truth = rover
    path = os.path.join(root, "radar")
    iq_path = os.path.join(path, "iq")
    iq = truth["radar"]["iq"]
    per = iq[0].nbytes
    cut_inside(iq_path, 59, per)
    radar = sensors.XWRRadar(path)
    assert len(radar) == len(truth["radar"]["ts"]) > 60  # `ts` still counts the samples cut
    np.testing.assert_array_equal(radar[58].iq[0, 0], iq[58])
    for index, window in ((59, radar), (60, radar), (61, sensors.XWRRadar(path, past=2))):
        with pytest.raises(roverlog.DamagedSampleError) as e:
            window[index]
        # The first sample missing from the window read.
        assert_names(e.value, iq_path, 59 if window.past else index)
    with pytest.raises(roverlog.DamagedSampleError) as e:
        radar["iq"][59]
    assert_names(e.value, iq_path, 59)
    dynamic = sensors.DynamicSensor(path)
    with pytest.raises(roverlog.DamagedSampleError) as e:
        dynamic[59]
    assert_names(e.value, iq_path, 59)
    np.testing.assert_array_equal(dynamic[58]["iq"][0], iq[58])
    # As in a DataLoader's worker: the error comes back pickled, still naming both.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_read_radar, [(path, 3)])[0] == iq[3].sum()
        with pytest.raises(roverlog.DamagedSampleError) as e:
            pool.map(_read_radar, [(path, 59)])
    assert_names(e.value, iq_path, 59)


def test_a_read_past_the_end_of_ts_still_gives_what_exists(rover):
    """Upstream's rule for reads past the end (what exists, no error) is kept where no
    sample is missing: the channel holds every sample `ts` counts."""
    root, truth = rover
    iq = truth["radar"]["iq"]
    ch = sensors.XWRRadar(os.path.join(root, "radar"))["iq"]
    got = ch.read(len(iq) - 2, samples=10)
    np.testing.assert_array_equal(got, iq[-2:])
    assert ch.read(len(iq), samples=3).shape == (0, *iq.shape[1:])
