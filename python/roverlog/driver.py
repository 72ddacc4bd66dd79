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
daemon did not receive; samples stay in memory until a `sync()` reports them durable (up to
`max_retained` bytes: sync from time to time). The protocol is unchanged: any daemon that
speaks it works.
"""
import json
import os

from . import _roverlog

FIXED = ("raw", "lzmaf")
VARIABLE = ("jpg", "npz", "mjpg")


def _channel(c):
    if isinstance(c, dict):
        d = dict(c)
    else:
        name, fmt, typ, shape, *desc = c
        d = {"name": name, "format": fmt, "type": typ, "shape": list(shape), "desc": desc[0] if desc else ""}
    for k in ("name", "format", "type", "shape"):
        if k not in d:
            raise ValueError(f"channel {c!r}: no {k!r}")
    if d["format"] not in FIXED + VARIABLE:
        raise ValueError(f"channel {d['name']!r}: format {d['format']!r} cannot be sent ({', '.join(FIXED + VARIABLE)})")
    return d


class Driver:
    def __init__(self, socket, sensor, channels, seq=False, max_delay=0.005, max_bytes=1 << 20,
                 max_retained=256 << 20, reconnect_timeout=30.0):
        chans = [_channel(c) for c in channels]
        meta = {"ts": {"format": "raw", "type": "f8", "shape": [], "desc": "epoch time in seconds"}}
        for c in chans:
            meta[c["name"]] = {"format": c["format"], "type": c["type"], "shape": list(c["shape"]),
                               "desc": c.get("desc", "")}
        self.sensor = sensor
        self.channels = chans
        self._native = _roverlog.NativeDriver(os.fspath(socket), sensor, json.dumps(meta), bool(seq),
                                              float(max_delay), int(max_bytes), int(max_retained),
                                              float(reconnect_timeout))

    def send(self, ts, *samples, seq=None):
        """One sample: its time (epoch seconds) and one buffer per declared channel."""
        self._native.send(float(ts), list(samples), seq)

    def flush(self):
        self._native.flush()

    def sync(self):
        """Flushes, then asks the daemon for durability; returns the sensor's durable count."""
        return self._native.sync()

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
