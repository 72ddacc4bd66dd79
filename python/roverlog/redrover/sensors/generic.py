"""The sensor base class and `DynamicSensor`, as upstream `roverd.sensors.generic`."""
import json
import os
import warnings
from functools import cached_property

import numpy as np
from abstract_dataloader import abstract, generic

from ...errors import Error, FormatError, from_os_error, quoted, quoted_list
from .. import channels, remote as _where, timestamps


def _correction(correction):
    if correction is None:
        return timestamps.identity
    if isinstance(correction, str):
        found = getattr(timestamps, correction, None)
        if found is None or correction.startswith("_"):
            raise ValueError(f"unknown timestamp correction {quoted(correction)} (roverlog.redrover.timestamps has {quoted_list(timestamps.__all__)})")
        return found
    return correction


class Sensor(abstract.Sensor):
    """A sensor directory (`meta.json`, `ts`, its channels) with `past`/`future` frames per
    sample and a timestamp `correction` (`None`, a name in `timestamps`, or a callable).

    `path`, `channels` (name -> channel), `correction`, `past`, `future`, `window`,
    `config` (the parsed `meta.json`); `filesize` (bytes), `datarate` (bytes/s),
    `len(sensor)` (samples in `ts`). As upstream, a caller reading index `i` with `past` or
    `future` must keep `past <= i < len - future`. An `s3://` path reads in place (`roverlog.redrover.remote`)."""

    def __init__(self, path, correction=None, past=0, future=0, args={}):
        self.path = path
        self.past = past
        self.future = future
        self.window = past + future + 1
        meta = os.path.join(path, "meta.json")
        try:
            if _where.is_url(path):
                self.config = _where.read_json(meta)
                if self.config is None:
                    raise FileNotFoundError(meta)
            else:
                with open(meta) as f:
                    self.config = json.load(f)
        except Error:
            raise  # the store's own (a bucket or trace not there), not a missing file
        except FileNotFoundError:
            raise FormatError(f"{meta}: no such file (not a sensor directory)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise FormatError(f"{meta}: not valid JSON: {e}") from None
        except OSError as e:
            raise FormatError(f"{meta}: cannot read: {e}") from None
        if not isinstance(self.config, dict):
            raise FormatError(f"{meta}: not a JSON object of channels")
        for name, channel_args in args.items():
            if name in self.config:
                self.config[name]["args"] = channel_args
        self.channels = {
            name: channels.from_config(path=os.path.join(self.path, name), **cfg) for name, cfg in self.config.items()
        }
        self.correction = _correction(correction)

    def _timestamps(self):
        """`ts` with the correction applied."""
        return self.correction(self.channels["ts"].read(start=0, samples=-1))

    @cached_property
    def filesize(self):
        """Bytes on disk, every channel."""
        return sum(c.filesize for c in self.channels.values())

    @cached_property
    def datarate(self):
        """Bytes per second of recording."""
        return self.filesize / self.duration

    def __len__(self):
        ts = os.path.join(self.path, "ts")
        if _where.is_url(ts):
            return _where.size(ts) // 8
        return os.stat(ts).st_size // 8

    def __repr__(self):
        return "{}({}: [{}])".format(type(self).__name__, self.path, ", ".join(self.channels))


class DynamicSensor(Sensor):
    """Any sensor: `sensor[i]` is `{channel: (window, *shape) array}` for every channel
    (`ts` included, uncorrected), or for the channels in `subset`; `metadata.timestamps`
    are the corrected `ts`."""

    def __init__(self, path, create=False, exist_ok=False, subset=None, correction=None, past=0, future=0):
        if create:
            if _where.is_url(path):
                raise _where.refuse_writing(path, "DynamicSensor(create=True)")
            if os.path.exists(path):
                if not exist_ok:
                    raise ValueError(f"{path}: create=True, but the sensor exists (exist_ok=True opens it)")
            else:
                try:
                    os.makedirs(path)
                except OSError as e:
                    raise from_os_error(e, path) from None
                self.path, self.config = path, {}
                self._flush_config()
        super().__init__(path=path, correction=correction, past=past, future=future)
        self.subset = subset

    def _flush_config(self):
        """Writes `meta.json` (the channels' descriptions, indented as upstream writes it),
        atomically: a crash leaves the old file or the new one, never half of one."""
        meta = os.path.join(self.path, "meta.json")
        tmp = meta + ".tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(self.config, f, indent=4)
            os.replace(tmp, meta)
        except OSError as e:
            raise from_os_error(e, meta) from None

    def create(self, channel, meta, args={}):
        """A new channel `channel` described by `meta` (`format`, `type`, `shape`, `desc`:
        a `meta.json` entry), opened for writing with `args`; `meta.json` is rewritten with
        it, as upstream's."""
        if _where.is_url(self.path):
            raise _where.refuse_writing(self.path, "DynamicSensor.create()")
        self.config[channel] = meta
        self.channels[channel] = channels.from_config(path=os.path.join(self.path, channel), args=args, **meta)
        self._flush_config()
        return self.channels[channel]

    @cached_property
    def metadata(self):
        if "ts" not in self.channels:
            warnings.warn(f"Sensor metadata does not contain 'ts' channel: {self.path}.")
            return generic.Metadata(timestamps=np.array([], dtype=np.float64))
        return generic.Metadata(timestamps=self._timestamps())

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        names = self.channels if self.subset is None else self.subset
        return {k: self.channels[k].read(index - self.past, samples=self.window) for k in names}
