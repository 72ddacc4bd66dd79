"""`Trace`, `Dataset` and `split`, as upstream `roverd.trace`: abstract-dataloader's
`abstract.Trace`/`abstract.Dataset` over roverlog's sensors; `s3://` paths read in place
(`roverlog.redrover.remote`)."""
import os
from functools import cached_property
from multiprocessing.pool import ThreadPool

import numpy as np
from abstract_dataloader import abstract, generic

from ..errors import FileError
from . import remote as _where
from .sensors import from_config


def _listdir(path):
    try:
        return os.listdir(path)
    except FileNotFoundError:
        raise FileError(f"{path}: no such trace directory") from None
    except NotADirectoryError:
        raise FileError(f"{path}: a file, not a trace directory") from None


class Trace(abstract.Trace):
    """One recording: `Trace(sensors, sync=None, name="trace")` with `sensors` a mapping of
    sensor objects and `sync` a synchronisation (e.g. `generic.Nearest("lidar")`), indices
    `{sensor: array}` used as given, or `None` (sensors already in step).

    `trace[i]` is `{sensor: sensor[indices[sensor][i]]}`; `trace["radar"]` the sensor;
    `trace.indices` the synchronised indices; `len(trace)` their count; `filesize` and
    `datarate` sum the sensors'."""

    @staticmethod
    def find_sensors(path, virtual=False):
        """Names of the sensor directories (with `meta.json`) in `path`, in directory order;
        virtual sensors (`_name`) only with `virtual=True` (on object storage: sorted)."""
        if _where.is_url(path):
            return _where.sensor_names(path, virtual=virtual)
        return [
            p for p in _listdir(path)
            if os.path.isdir(os.path.join(path, p))
            and (virtual or not p.startswith("_"))
            and os.path.exists(os.path.join(path, p, "meta.json"))
        ]

    @classmethod
    def from_config(cls, path, sync=generic.Empty(), sensors=None, include_virtual=False, name=None):
        """The trace at `path`. `sensors` maps names to a type (a name in
        `sensors.SENSOR_TYPES`, `"auto"` for the type named like the sensor, a constructor, an
        instance, or `None` for `DynamicSensor`); without it, every sensor found is a
        `DynamicSensor`. The default `sync` (`generic.Empty()`) gives no samples."""
        if sensors is None:
            sensors = {k: None for k in Trace.find_sensors(path, virtual=include_virtual)}
        elif _where.is_url(path):
            _where.open_trace(path)
        elif not os.path.isdir(path):
            _listdir(path)
        initialized = {k: from_config(os.path.join(path, k), type=(k if v == "auto" else v)) for k, v in sensors.items()}
        return cls(sensors=initialized, sync=sync, name=path if name is None else name)

    @cached_property
    def filesize(self):
        """Bytes on disk of the sensors this trace was opened with."""
        return sum(getattr(s, "filesize", 0) for s in self.sensors.values())

    @cached_property
    def datarate(self):
        """Bytes per second of the sensors this trace was opened with."""
        return sum(getattr(s, "datarate", 0) for s in self.sensors.values())


class Dataset(abstract.Dataset):
    """Traces one after another: `dataset[i]` is the sample of the trace that holds global
    index `i`."""

    def __init__(self, traces):
        self.traces = traces

    @staticmethod
    def find_traces(*paths, follow_symlinks=False):
        """Every directory holding `config.yaml` at or below `paths` (a trace's own
        subdirectories are not searched). An `s3://bucket/prefix` is searched with one
        listing, each trace found opened (one listing, which `from_config` reuses) to check
        its `config.yaml`; its traces come back as URLs, sorted."""

        def find(path):
            if _where.is_url(path):
                return _where.find_traces(path)
            if os.path.exists(os.path.join(path, "config.yaml")):
                return [path]
            try:
                entries = list(os.scandir(path))
            except FileNotFoundError:
                raise FileError(f"{path}: no such directory") from None
            return sum((find(os.path.join(path, e.name)) for e in entries if e.is_dir(follow_symlinks=follow_symlinks)), start=[])

        return sum((find(p) for p in paths), start=[])

    @classmethod
    def from_config(cls, paths, sync=generic.Empty(), sensors=None, include_virtual=False, workers=0):
        """`Trace.from_config` for each path (`workers` threads; `-1`: one per trace)."""
        if workers < 0:
            workers = len(paths)

        def load(p):
            return Trace.from_config(p, sync=sync, sensors=sensors, include_virtual=include_virtual)

        if workers == 0:
            traces = [load(p) for p in paths]
        else:
            with ThreadPool(workers) as pool:
                traces = pool.map(load, paths)
        return cls(traces=traces)


def split(dataset, start=0.0, end=0.0):
    """The samples from fraction `start` to `end` (0 <= start < end <= 1) of a trace, or of
    every trace of a dataset."""
    if not 0 <= start < end <= 1:
        raise ValueError(f"Invalid split range: {start} - {end} (must be in [0, 1])")
    if isinstance(dataset, Trace):
        if dataset.indices is None:
            indices = {k: np.arange(len(v), dtype=np.int32) for k, v in dataset.sensors.items()}
        else:
            indices = dataset.indices
        if not indices:
            raise ValueError("There must be at least one sensor.")
        n = len(next(iter(indices.values())))
        a, b = int(n * start), int(n * end)
        return Trace(sensors=dataset.sensors, sync={k: np.copy(v[a:b]) for k, v in indices.items()})
    return Dataset(traces=[split(t, start=start, end=end) for t in dataset.traces])


__all__ = ["Trace", "Dataset", "split"]
