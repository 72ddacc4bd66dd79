"""roverd traces read in place on object storage: `roverlog.Trace("s3://bucket/prefix/trace")`.

The store's settings come from the standard `AWS_*` variables (`AWS_ENDPOINT_URL`,
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`; docs/offload.md). The native
library lists the trace once, reads a sensor's `meta.json` and `ts` when it is first asked
for, a channel's index (`lzmaf`'s `_i`, a video's `idx1`) when it opens, and then one range
`GET` per sample: a random camera frame costs its own bytes, not the file's.

`RemoteTrace`, `RemoteSensor` and `RemoteChannel` answer as `Trace`, `Sensor` and `Channel`
do (`trace["camera"].channels["video.avi"][10:20]`, `sensor.timestamps`, `Nearest` sync,
`stream`, `to_dask`), and pickle by URL: a DataLoader worker opens its own connection from
the URL and its `AWS_*` environment. `requests(url)` counts what this process's reads cost
(a run of `raw` samples is one `GET`).
"""
import json
import os

from . import _roverlog
from .errors import FormatError
from .trace import TS, Channel, Sensor, Trace, _Names

_open = {}
# The bytes of `raw` samples a stream fetches at once.
_RUN_BYTES = 4 << 20


def _native(url):
    """This process's handle on the trace at `url` (opened again in a forked child, and
    when the `AWS_*` variables changed)."""
    key = (url, os.getpid(), tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))
    handle = _open.get(key)
    if handle is None:
        handle = _open[key] = _roverlog.NativeRemoteTrace(url)
    return handle


def find_traces(url):
    """The traces at or below `s3://bucket/prefix` (directories holding `config.yaml` or a
    sensor's `meta.json`), as URLs, sorted."""
    return _roverlog.find_traces(url)


def requests(url):
    """The requests this process's handle on the trace at `url` made so far (`gets`,
    `got_bytes`, `heads`, `lists`): what a read cost."""
    return _native(url.rstrip("/")).requests()


def is_url(path):
    """Whether `path` names object storage (`s3://...`)."""
    return isinstance(path, str) and path.startswith("s3://")


class _ChannelHandle:
    """What `Channel` asks of its native reader, for one channel of a remote trace."""

    def __init__(self, url, sensor, channel):
        self._args = (url, sensor, channel)

    def len(self):
        url, sensor, channel = self._args
        return _native(url).len(sensor, channel)

    def read(self, start, count, decode=True):
        url, sensor, channel = self._args
        return _native(url).read(sensor, channel, start, count, decode)


class RemoteChannel(Channel):
    """One channel of a sensor on object storage."""

    def __init__(self, url, sensor, name, meta, writable=False):
        super().__init__(f"{url}/{sensor}", name, meta, writable)
        self.url, self.sensor = url, sensor

    def __reduce__(self):
        return (RemoteChannel, (self.url, self.sensor, self.name, self.meta, self.writable))

    def _native(self):
        return _ChannelHandle(self.url, self.sensor, self.name)

    def __len__(self):
        return self._native().len()

    def read(self, start=0, samples=-1, decode=True):
        start, samples = self._bounds(start, samples)
        data, shape = self._native().read(start, samples, decode)
        return self._from_native(data, shape, samples, decode)

    def stream(self, batch=None):
        """As `Channel.stream`; `raw` samples are fetched in runs of about 4 MiB, one `GET`
        each (not one a sample)."""
        step = 1 if batch is None else int(batch)
        if self.format != "raw" or step < 1:
            yield from super().stream(batch)
            return
        n = len(self)
        run = max(step, (_RUN_BYTES // max(self.sample_bytes, 1)) // step * step)
        for i in range(0, n, run):
            block = self.read(i, min(run, n - i))
            for j in range(0, len(block), step):
                yield block[j] if batch is None else block[j:j + step]


class RemoteSensor(Sensor):
    """A sensor of a trace on object storage."""

    def __init__(self, url, name, writable=False):
        self.url = url
        self.path = f"{url}/{name}"
        self.name = name
        self.writable = writable
        self.meta = json.loads(_native(url).meta(name))
        self.channels = _Names(
            {n: RemoteChannel(url, name, n, m, writable) for n, m in self.meta.items()}, self.path, "channel"
        )

    def __reduce__(self):
        return (RemoteSensor, (self.url, self.name, self.writable))

    def __repr__(self):
        return f"RemoteSensor({self.path!r}, {len(self)} samples, channels={list(self.channels)})"

    def __len__(self):
        return len(self.channels[TS])

    def check(self):
        raise FormatError(f"{self.path}: checked by `roverlog validate {self.url}` (not from Python on object storage)")


class RemoteTrace(Trace):
    """A trace on object storage, as `Trace` reads a directory."""

    def __init__(self, path, sync=None, writable=False):
        if getattr(self, "url", None) == path.rstrip("/"):
            return  # `Trace(url)` made it and Python calls `__init__` again
        self.url = self.path = path.rstrip("/")
        names = [n for n in _native(self.url).sensor_names() if not n.startswith("_")]
        self.sync = sync
        self.writable = writable
        self.sensors = _Names({n: RemoteSensor(self.url, n, writable) for n in names}, self.path, "sensor")

    def __reduce__(self):
        return (RemoteTrace, (self.url, self.sync, self.writable))

    def read_file(self, path):
        """The trace's file `path` (e.g. `_roverlog/events.jsonl`) as bytes; `None` when it
        has none."""
        return _native(self.url).read_file(path)

    def __repr__(self):
        return f"RemoteTrace({self.url!r}, sensors={list(self.sensors)})"


Trace._in_place["s3://"] = RemoteTrace
