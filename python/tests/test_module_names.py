"""The modules' names before they were renamed (issue 38: `roverd.py` is `trace.py`, the zarr
reader's underscore modules the `roverlog.zarr` package) still import, as the same modules,
and pickles that name them still load."""
import importlib
import pickle

import roverlog
import roverlog.zarr


def test_old_module_names_are_the_renamed_modules():
    for old, new in [
        ("roverlog.roverd", roverlog.trace),
        ("roverlog._zarr_meta", roverlog.zarr.meta),
        ("roverlog._selection", roverlog.zarr.selection),
        ("roverlog._zarr_url", roverlog.zarr.url),
    ]:
        assert importlib.import_module(old) is new, old
    from roverlog import roverd
    from roverlog.roverd import Channel, Nearest, Sensor, Trace
    from roverlog._zarr_meta import DirectoryStore

    assert roverd is roverlog.trace
    assert (Channel, Nearest, Sensor, Trace) == (roverlog.Channel, roverlog.Nearest, roverlog.Sensor, roverlog.Trace)
    assert DirectoryStore is roverlog.zarr.DirectoryStore


def test_pickles_naming_the_old_modules_load(trace):
    root, _ = trace
    # Protocol 0's GLOBAL opcode names a module and a class, as a pickle written before the
    # rename does.
    assert pickle.loads(b"croverlog.roverd\nTrace\n.") is roverlog.Trace
    assert pickle.loads(b"croverlog._zarr_meta\nDirectoryStore\n.") is roverlog.zarr.DirectoryStore
    t = pickle.loads(pickle.dumps(roverlog.Trace(root)))
    assert list(t.sensors) == list(roverlog.Trace(root).sensors)
    assert type(t).__module__ == "roverlog.trace"
