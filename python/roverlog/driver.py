"""A driver for the roverlog daemon (docs/protocol.md), native underneath.

    with roverlog.Driver("run/ingest.sock", "imu", [("acc", "raw", "f4", [3])]) as d:
        for t, acc in readings:                 # acc: a numpy float32 array of 3 values
            d.send(t, acc)
        print(d.sync())                         # samples of this sensor that survive a power cut

`send(ts, *samples)` takes one buffer per declared channel (numpy arrays, bytes, anything
with the buffer protocol; C-contiguous, in the declared type: no per-element Python work).
Samples are coalesced into large writes: a batch goes out when it reaches `max_bytes` or when
its oldest sample waited `max_delay` seconds. When the daemon stops or restarts, the driver
reconnects with back-off (for up to `reconnect_timeout` seconds) and resends every sample the
daemon does not hold; samples stay in memory until a `sync()` reports them durable (up to
`max_retained` bytes: sync from time to time).

Exactly once. After a clean daemon stop (SIGTERM, `systemctl stop`) the daemon tells the
driver its final durable count before it closes (docs/protocol.md 6.1, `final_ack`): those
samples are in the stopped trace, and only the others are resent into the next one. After
a crash (kill -9) the daemon resumes the same trace and says how many samples it holds: only
the ones after those are resent. With `seq=True` the daemon also drops any sample that
repeats a sequence number (and time) already written in the trace (`dedup`, docs/protocol.md
4.2; `dedup=False` turns that off). A daemon older than these opt-ins is still spoken to,
without them.

Not recording. While the daemon records nothing (`roverlog ctl stop`, autostart off, the disk
guard), it discards what it is sent. The driver learns it from the daemon's replies (the
hello, and every `sync()`), warns once with `NotRecordingWarning` when a sample is sent or
synced meanwhile, and `sync()` returns a `Durable`: an `int` (the durable count, as before)
whose `.recording` is False and `.reason` says why nothing was kept.

Sidecar files. `files=` (a mapping name -> bytes, or a list of `(name, bytes)`) are files for
the sensor's directory, such as an Ouster lidar's `lidar.json` (docs/protocol.md 2.6): they
go with every hello, and the daemon writes them durably into `<trace>/<sensor>/` before its
`meta.json`, in every trace while the driver lives. `files_taken` says whether the daemon
took them (False from a daemon that predates them: the driver then records without them).
A name that is not a plain file name (empty, with `/`, `\\`, `..` or control characters,
starting with `.`, `meta.json`) or given twice raises `ValueError` naming it before anything
is sent; what only the daemon knows (a name of one of the sensor's channel files, over 16
files or 1 MiB, a file that differs from the one already in the trace for this sensor) it
refuses at the hello: `roverlog.FormatError` (a `ValueError`) with the daemon's words, naming
the file, and nothing in the trace changes.

No daemon. The first connection waits up to `connect_timeout` seconds (default
`reconnect_timeout`) for the daemon to appear, warns once with `DaemonWaitWarning` after a
second of waiting, then raises `roverlog.FileError` (a `FileNotFoundError`) naming the
socket when it does not exist (`roverlog.ReadError`, an `OSError`, when it refuses).
"""
import json
import os
import warnings
from collections.abc import Mapping

from . import _roverlog
from .errors import quoted

FIXED = ("raw", "lzmaf")
VARIABLE = ("jpg", "npz", "mjpg")


class NotRecordingWarning(UserWarning):
    """Samples were sent while the daemon records nothing: they are discarded."""


class DaemonWaitWarning(UserWarning):
    """The driver is waiting for a daemon that is not (yet) there."""


class Durable(int):
    """What `Driver.sync()` returns: the sensor's durable count (an `int`), with
    `.recording` (whether the daemon records) and `.reason` (why nothing was kept, else
    None)."""

    def __new__(cls, durable, reason=None):
        d = super().__new__(cls, durable)
        d.reason = reason
        d.recording = reason is None
        return d

    def __repr__(self):
        return f"Durable({int(self)}, recording={self.recording})"


def _channel(c):
    if isinstance(c, dict):
        d = dict(c)
    else:
        name, fmt, typ, shape, *desc = c
        d = {"name": name, "format": fmt, "type": typ, "shape": list(shape), "desc": desc[0] if desc else ""}
    for k in ("name", "format", "type", "shape"):
        if k not in d:
            raise ValueError(f"channel {quoted(c)}: no {quoted(k)}")
    if d["format"] not in FIXED + VARIABLE:
        raise ValueError(f"channel {quoted(d['name'])}: format {quoted(d['format'])} cannot be sent ({', '.join(FIXED + VARIABLE)})")
    return d


def _files(files):
    """`files=` as a list of `(name, bytes)`; TypeError/ValueError naming a bad entry."""
    if files is None:
        return []
    if isinstance(files, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"files: expected a mapping name -> bytes or a list of (name, bytes), got {type(files).__name__}")
    if isinstance(files, Mapping):
        entries = list(files.items())
    else:
        try:
            entries = list(files)
        except TypeError:
            raise TypeError(f"files: expected a mapping name -> bytes or a list of (name, bytes), got {type(files).__name__}") from None
    out = []
    seen = set()
    for i, entry in enumerate(entries):
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise TypeError(f"files: entry {i} ({entry!r:.80}) is not a (name, bytes) pair")
        name, data = entry
        if not isinstance(name, str):
            raise TypeError(f"files: entry {i}: the name {name!r:.80} is not a str")
        if isinstance(data, str):
            raise TypeError(f"file {quoted(name)}: its contents are a str; give bytes (encode the text)")
        try:
            data = bytes(memoryview(data))
        except TypeError:
            raise TypeError(f"file {quoted(name)}: its contents ({type(data).__name__}) are not bytes or a buffer") from None
        # Core's rule for a sidecar name (the daemon's too): roverlog.FormatError, a ValueError.
        _roverlog.check_file_name(name)
        if name in seen:
            raise ValueError(f"file {quoted(name)}: given twice")
        seen.add(name)
        out.append((name, data))
    return out


class Driver:
    def __init__(self, socket, sensor, channels, seq=False, max_delay=0.005, max_bytes=1 << 20,
                 max_retained=256 << 20, reconnect_timeout=30.0, connect_timeout=None, dedup=True,
                 files=None):
        chans = [_channel(c) for c in channels]
        sidecar = _files(files)
        meta = {"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "epoch time in seconds"}}
        for c in chans:
            meta[c["name"]] = {"format": c["format"], "type": c["type"], "shape": list(c["shape"]),
                               "desc": c.get("desc", "")}
        self.sensor = sensor
        self.channels = chans
        self._warned = False

        def waiting(message):
            # user code -> __init__ -> (native) -> here
            warnings.warn(message, DaemonWaitWarning, stacklevel=3)

        self._native = _roverlog.NativeDriver(
            os.fspath(socket), sensor, json.dumps(meta), bool(seq), float(max_delay), int(max_bytes),
            int(max_retained), float(reconnect_timeout),
            None if connect_timeout is None else float(connect_timeout), bool(dedup), waiting, sidecar)

    def _not_recording(self, recording, stacklevel):
        if recording:
            self._warned = False
        elif not self._warned:
            self._warned = True
            warnings.warn(self._native.not_recording or "the daemon is not recording",
                          NotRecordingWarning, stacklevel=stacklevel + 1)

    def send(self, ts, *samples, seq=None):
        """One sample: its time (epoch seconds) and one buffer per declared channel. Warns
        once (`NotRecordingWarning`) while the daemon records nothing."""
        if not self._native.send(float(ts), list(samples), seq):
            self._not_recording(False, 2)

    def flush(self):
        self._native.flush()

    def sync(self):
        """Flushes, then asks the daemon for durability; returns the sensor's durable count as
        a `Durable` (an `int`; `.recording` False and `.reason` set when the daemon records
        nothing and discarded the samples, which also warns once)."""
        durable, reason = self._native.sync()
        self._not_recording(reason is None, 2)
        return Durable(durable, reason)

    @property
    def recording(self):
        """Whether the daemon recorded at its last reply (hello or sync)."""
        return self._native.recording

    @property
    def files_taken(self):
        """Whether the daemon took the `files=` at the last hello (they are then durable in
        `<trace>/<sensor>/`); False without files, or from a daemon that predates them."""
        return self._native.files_taken

    @property
    def sent(self):
        return self._native.sent

    @property
    def durable(self):
        return self._native.durable

    @property
    def trace(self):
        return self._native.trace

    def close(self, sync=False):
        self._native.close(sync)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # A clean exit makes everything durable; after an error, flush what we can.
        self.close(sync=exc_type is None)
        return False
