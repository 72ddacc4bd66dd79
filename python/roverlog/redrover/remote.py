"""`s3://` paths in `roverlog.redrover`: upstream's `Trace.from_config`, `Dataset`, sensors
and channels open `s3://bucket/prefix/trace` as they open a directory, reading in place.

The store's settings come from the standard `AWS_*` variables (docs/offload.md). The trace
is read through `roverlog.remote`'s native handle (one per trace URL and process): the
trace listed once, a sensor's `meta.json` (and any `radar.json`, `lidar.json`, `pose.npz`)
one `GET` each, a channel's index (`lzmaf`'s `_i`, a video's `idx1`) when it opens, then
one range `GET` per sample (a run of `raw` samples: one `GET`). Nothing is downloaded
whole but `ts`, an `lzma` channel (one `.xz` stream) and the small files above.

A path names object storage when it starts with `s3://`; a sensor is `<trace>/<sensor>`, a
channel `<trace>/<sensor>/<channel>`. `filesize` is the size the listing gave. Writing
(`write`, `consume`, `memmap`, `DynamicSensor(create=True)`) raises
`io.UnsupportedOperation` naming the path: traces are written locally and sent with
`roverlog offload`.

Each process opens its own connection: channels, sensors, traces and datasets pickle by
URL into DataLoader workers, which read with their own `AWS_*` environment.
"""
import functools
import io
import json

from .. import remote as _remote
from ..errors import FileError, FormatError
from ..remote import is_url

SCHEME = "s3://"


def _parent(url):
    """`url` without its last component: `(parent, name)`."""
    parent, _, name = url.rstrip("/").rpartition("/")
    if not name or len(parent) < len(SCHEME) + 1:
        raise FileError(f"{url}: not a path inside a trace on object storage (s3://bucket/prefix/trace/sensor)")
    return parent, name


def split_channel(path):
    """`s3://.../trace/sensor/channel` -> (trace URL, sensor name, channel name)."""
    sensor, channel = _parent(path)
    trace, name = _parent(sensor)
    return trace, name, channel


def _native(trace):
    return _remote._native(trace.rstrip("/"))


_listings = {}


def files(trace):
    """Every file of the trace at `trace` (path relative to it) and its size, as listed
    when this process opened it."""
    handle = _native(trace)
    found = _listings.get(id(handle))
    if found is None or found[0] is not handle:
        found = _listings[id(handle)] = (handle, handle.files())
    return found[1]


def read_file(path):
    """The bytes of the file `s3://.../trace/<dir>/<name>` (a sensor's `meta.json`,
    `radar.json`, `lidar.json`; `_radar/pose.npz`), or `None` when the trace has none."""
    d, name = _parent(path)
    trace, sub = _parent(d)
    return _native(trace).read_file(f"{sub}/{name}")


def read_json(path):
    """`read_file(path)` parsed as JSON, or `None` when there is no such file."""
    data = read_file(path)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: not valid JSON: {e}") from None


def exists(path):
    """Whether the file `s3://.../trace/<dir>/<name>` is in the trace's listing."""
    d, name = _parent(path)
    trace, sub = _parent(d)
    return f"{sub}/{name}" in files(trace)


def size(path, tree=False):
    """Bytes of the file at `s3://.../trace/sensor/channel`, or (`tree=True`) of every file
    below it (a blob channel's directory). A file the listing lacks is a `FileError`."""
    trace, sensor, channel = split_channel(path)
    rel = f"{sensor}/{channel}"
    listed = files(trace)
    if tree:
        below = [n for p, n in listed.items() if p.startswith(rel + "/")]
        if not below:
            raise FileError(f"{path}: no such directory")
        return sum(below)
    if rel not in listed:
        raise FileError(f"{path}: no such file")
    return listed[rel]


def sensor_names(trace, virtual=False):
    """The sensors (directories with `meta.json`) of the trace at `trace`, sorted; virtual
    ones (`_name`) only with `virtual=True`."""
    return [n for n in _native(trace).sensor_names() if virtual or not n.startswith("_")]


def open_trace(trace):
    """Opens the trace at `trace` (one listing): a `FileError` naming the bucket or the
    trace when there is none."""
    _native(trace)


def find_traces(url):
    """The traces at or below `url` that hold `config.yaml` (what upstream's
    `Dataset.find_traces` looks for), as URLs, sorted."""
    return [t for t in _remote.find_traces(url) if "config.yaml" in files(t)]


def channel(path, meta):
    """The reader of the channel at `s3://.../trace/sensor/channel`, with `meta` its
    `meta.json` entry (`roverlog.remote.RemoteChannel`; copies the caller owns)."""
    trace, sensor, name = split_channel(path)
    return _remote.RemoteChannel(trace.rstrip("/"), sensor, name, meta, writable=True)


def refuse_writing(path, what):
    """The error for writing (`what`) to `path` on object storage."""
    return io.UnsupportedOperation(
        f"{path}: {what} on object storage is not supported (roverlog.redrover reads s3:// traces in place; "
        "write the trace locally, then `roverlog offload` it)"
    )


def local_only(method):
    """`method` of a channel, refused on object storage (a writer)."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        if is_url(self.path):
            raise refuse_writing(self.path, f"{type(self).__name__}.{method.__name__}()")
        return method(self, *args, **kwargs)

    return checked


__all__ = [
    "is_url", "split_channel", "files", "read_file", "read_json", "exists", "size",
    "sensor_names", "open_trace", "find_traces", "channel", "refuse_writing", "local_only",
]
