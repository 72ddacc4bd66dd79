#!/usr/bin/env python3
"""A roverlog driver in plain Python 3 (standard library only): copy it and adapt it.

It connects to the daemon's ingest socket, declares one IMU-like sensor (acc and gyro,
f4 [3]) with sequence numbers, sends samples at a fixed rate, reconnects with back-off when
the daemon stops or restarts, asks for durability at the end and prints every reply. The
protocol is specified in docs/protocol.md.

    python3 examples/driver.py --socket ./run/ingest.sock --sensor imu --rate 100 --count 500

As a library:

    from driver import Channel, Driver, DaemonError
    channels = [Channel("acc", "raw", "f4", [3], "m/s^2")]
    with Driver("./run/ingest.sock", "imu", channels, seq=True) as d:
        d.send(time.time(), [[0.0, 0.0, 9.81]], seq=0)
        print(d.sync())            # samples of this sensor that survive a power cut
"""

import argparse
import json
import math
import os
import select
import signal
import socket
import struct
import sys
import time
from typing import Dict, NamedTuple, Optional, Sequence

PROTOCOL_VERSION = 1
# The daemon answers in short JSON lines; anything longer than this is not a reply.
MAX_REPLY_LINE = 1 << 20

# struct codes for the numpy type codes of the protocol (little-endian everywhere).
# Complex values are sent as (real, imaginary) pairs of the float type.
_STRUCT = {
    "u1": "B", "i1": "b", "u2": "H", "i2": "h", "u4": "I", "i4": "i", "u8": "Q", "i8": "q",
    "f2": "e", "f4": "f", "f8": "d", "c8": "ff", "c16": "dd", "b1": "?",
}
_ITEMSIZE = {"u1": 1, "i1": 1, "u2": 2, "i2": 2, "u4": 4, "i4": 4, "u8": 8, "i8": 8,
             "f2": 2, "f4": 4, "f8": 8, "c8": 8, "c16": 16, "b1": 1}
FIXED_FORMATS = ("raw", "lzmaf")      # prod(shape) * itemsize bytes per sample
VARIABLE_FORMATS = ("jpg", "npz")     # u32 length + bytes per sample


class DaemonError(Exception):
    """The daemon refused the hello or a frame (its message says what and which frame),
    or closed the connection."""


class DaemonGone(DaemonError):
    """The daemon closed the connection without an error line: it is stopping or restarting
    (docs/protocol.md 6). Reconnect with back-off; what it had received is kept."""


class Channel(NamedTuple):
    """One declared channel (the implicit `ts` channel is never declared)."""
    name: str
    format: str        # raw | lzmaf | jpg | npz
    type: str          # u1 i1 u2 i2 u4 i4 u8 i8 f2 f4 f8 c8 c16 b1
    shape: Sequence[int]
    desc: str = ""

    def sample_bytes(self) -> Optional[int]:
        """Bytes of one sample on the wire, or None for a variable-size format."""
        if self.format in VARIABLE_FORMATS:
            return None
        return math.prod(self.shape) * _ITEMSIZE[self.type]

    def pack(self, sample) -> bytes:
        """The wire bytes of one sample. `sample` is bytes-like (used as is: numpy's
        `a.astype('<f4').tobytes()`, an encoded JPEG, ...) or, for fixed-size formats, a
        flat or nested sequence of numbers (complex numbers for c8/c16)."""
        if isinstance(sample, (bytes, bytearray, memoryview)):
            data = bytes(sample)
        elif self.format in VARIABLE_FORMATS:
            raise TypeError(f"channel {self.name!r}: {self.format} samples must be bytes")
        else:
            values = list(_flatten(sample))
            if self.type in ("c8", "c16"):
                values = [part for z in values for part in (z.real, z.imag)]
                code = "<" + _STRUCT[self.type][0] * len(values)
            else:
                code = "<" + _STRUCT[self.type] * len(values)
            data = struct.pack(code, *values)
        size = self.sample_bytes()
        if size is None:
            return struct.pack("<I", len(data)) + data
        if len(data) != size:
            raise ValueError(f"channel {self.name!r}: sample is {len(data)} bytes, "
                             f"expected {size} ({self.type} {list(self.shape)})")
        return data

    def to_json(self) -> dict:
        return {"name": self.name, "format": self.format, "type": self.type,
                "shape": list(self.shape), "desc": self.desc}


def _flatten(x):
    if isinstance(x, (list, tuple)):
        for item in x:
            yield from _flatten(item)
    else:
        yield x


class Driver:
    """One connection to the ingest socket = one sensor.

    `connect()` sends the hello and returns the daemon's reply (`reply["samples"]` is how many
    samples this sensor already has in the current trace: nonzero after a reconnect).
    `send()` sends one sample, `send_batch()` many in one write, `sync()` asks for
    durability. Every method raises `DaemonError` with the daemon's message on refusal.
    """

    def __init__(self, socket_path: str, sensor: str, channels: Sequence[Channel],
                 seq: bool = False, timeout: float = 10.0,
                 files: Optional[Dict[str, bytes]] = None):
        self.socket_path = socket_path
        self.sensor = sensor
        self.channels = list(channels)
        self.seq = seq
        # Sidecar files for the sensor's directory (name -> bytes, e.g. a lidar's
        # "lidar.json"), sent after the hello line (docs/protocol.md 2.6).
        self.files = dict(files or {})
        self.timeout = timeout
        self.sock: Optional[socket.socket] = None
        self._rbuf = b""
        self.hello_reply: Optional[dict] = None

    # --- connection ---------------------------------------------------------------------

    def connect(self) -> dict:
        hello = {"roverlog": PROTOCOL_VERSION, "sensor": self.sensor,
                 "channels": [c.to_json() for c in self.channels]}
        if self.seq:
            hello["seq"] = True
        if self.files:
            hello["files"] = [{"name": n, "bytes": len(b)} for n, b in self.files.items()]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self._rbuf = b""
        line = (json.dumps(hello, separators=(",", ":")) + "\n").encode()
        # The files' bytes follow the line back to back, in the order declared.
        self._send(line + b"".join(self.files.values()))
        reply = self._read_reply()
        self.hello_reply = reply
        return reply

    def close(self) -> None:
        """Ends the session at a frame boundary (the daemon keeps every frame sent)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> "Driver":
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- frames -------------------------------------------------------------------------

    def pack_frame(self, ts: float, samples: Sequence, seq: Optional[int] = None) -> bytes:
        """The wire bytes of one frame: u32 len, f64 ts, [u64 seq], then each channel."""
        if len(samples) != len(self.channels):
            raise ValueError(f"{len(samples)} samples for {len(self.channels)} channels")
        head = struct.pack("<d", ts)
        if self.seq:
            if seq is None:
                raise ValueError("this sensor was declared with seq: pass seq=")
            head += struct.pack("<Q", seq)
        body = head + b"".join(c.pack(s) for c, s in zip(self.channels, samples))
        return struct.pack("<I", len(body)) + body

    def send(self, ts: float, samples: Sequence, seq: Optional[int] = None) -> None:
        """Sends one sample: `samples` holds one value per declared channel, in order."""
        self.check()
        self._send(self.pack_frame(ts, samples, seq))

    def send_batch(self, frames: Sequence[bytes]) -> None:
        """Sends frames made by `pack_frame` in one write (cheapest for high rates)."""
        self.check()
        self._send(b"".join(frames))

    def check(self) -> None:
        """Raises DaemonError if the daemon has refused a frame. Writes into the socket
        succeed until the kernel notices the daemon closed it, so without this a refusal
        would only show up several frames later; it costs one poll, no waiting."""
        if self.sock is None:
            raise DaemonError("not connected")
        readable, _, _ = select.select([self.sock], [], [], 0)
        if readable:
            reply = self._read_reply()  # raises on {"ok": false} or EOF
            raise DaemonError(f"unexpected reply between frames: {reply}")

    def sync(self) -> int:
        """Asks for durability and waits: returns N, the samples of this sensor in the
        current trace that are now on stable storage (they survive a power cut)."""
        self._send(struct.pack("<I", 0))
        reply = self._read_reply()
        if "durable" not in reply:
            raise DaemonError(f"unexpected reply to a durability request: {reply}")
        return reply["durable"]

    # --- plumbing -----------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        if self.sock is None:
            raise DaemonError("not connected")
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            # The daemon closed: after refusing something (its reason is waiting to be read,
            # and _read_reply raises it), or because it is stopping (no line: DaemonGone).
            try:
                reply = self._read_reply()
            except OSError:
                raise DaemonGone(f"connection closed by the daemon ({e})")
            raise DaemonError(f"unexpected reply: {reply}")

    def _read_reply(self) -> dict:
        while b"\n" not in self._rbuf:
            if len(self._rbuf) > MAX_REPLY_LINE:
                raise DaemonError("reply line too long")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise DaemonGone("connection closed by the daemon without a reply")
            self._rbuf += chunk
        line, self._rbuf = self._rbuf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok", False):
            self.close()
            raise DaemonError(reply.get("error", f"refused: {reply}"))
        return reply


# --- the example: a simulated IMU -----------------------------------------------------------

IMU_CHANNELS = [
    Channel("acc", "raw", "f4", [3], "m/s^2"),
    Channel("gyro", "raw", "f4", [3], "rad/s"),
]


def imu_sample(t: float):
    """A plausible IMU reading: gravity plus a slow wobble."""
    acc = [0.2 * math.sin(t), 0.2 * math.cos(t), 9.81 + 0.05 * math.sin(3 * t)]
    gyro = [0.01 * math.cos(t), -0.02 * math.sin(t), 0.0]
    return [acc, gyro]


def reconnect(driver: Driver, give_up_after: float, why: Exception) -> bool:
    """docs/protocol.md 6: reconnect with back-off (0.1 s doubling to 5 s) until the daemon
    accepts the hello again, or `give_up_after` seconds have passed (then False)."""
    print(f"daemon went away ({why}); reconnecting", file=sys.stderr)
    driver.close()
    deadline = time.monotonic() + give_up_after
    delay = 0.1
    while True:
        try:
            print(f"reconnected: {json.dumps(driver.connect())}", flush=True)
            return True
        except (DaemonError, OSError) as e:
            # Refused while the daemon starts (no socket yet, or the old session not yet
            # ended) is expected; anything that lasts past the deadline is given up on.
            driver.close()
            if time.monotonic() + delay > deadline:
                print(f"giving up after {give_up_after:g} s: {e}", file=sys.stderr)
                return False
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Send a simulated IMU sensor to roverlog.")
    p.add_argument("--socket", default="./run/ingest.sock", help="ingest socket path")
    p.add_argument("--sensor", default="imu", help="sensor name (the directory in the trace)")
    p.add_argument("--rate", type=float, default=100.0, help="samples per second")
    p.add_argument("--count", type=int, default=500, help="samples to send (0: until Ctrl-C)")
    p.add_argument("--sync-every", type=int, default=0, metavar="N",
                   help="also ask for durability every N samples (default: only at the end)")
    p.add_argument("--reconnect-for", type=float, default=60.0, metavar="S",
                   help="when the daemon goes away (stops, restarts), keep trying to reconnect "
                        "for up to S seconds (0: give up at once)")
    p.add_argument("--file", action="append", default=[], metavar="PATH",
                   help="put this file into the sensor's directory of the trace, under its "
                        "own name (a sidecar file, docs/protocol.md 2.6); may be repeated")
    args = p.parse_args(argv)
    if args.rate <= 0:
        p.error("--rate must be positive")
    files = {}
    for path in args.file:
        with open(path, "rb") as f:
            files[os.path.basename(path)] = f.read()

    driver = Driver(args.socket, args.sensor, IMU_CHANNELS, seq=True, files=files)
    try:
        reply = driver.connect()
    except OSError as e:
        print(f"cannot connect to {args.socket}: {e}", file=sys.stderr)
        return 2
    except DaemonError as e:
        print(f"hello refused: {e}", file=sys.stderr)
        return 1
    print(f"connected: {json.dumps(reply)}")

    # Ctrl-C (SIGINT) ends the run with a last durability request. A shell that starts jobs
    # in the background leaves SIGINT ignored in them, and Python then installs no handler:
    # install it here, so `kill -INT` works however the driver was started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    period = 1.0 / args.rate
    start = time.monotonic()
    sent = 0
    try:
        while args.count == 0 or sent < args.count:
            # Sleep until the next tick; the timestamp is taken when the sample is made.
            delay = start + sent * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            ts = time.time()
            try:
                driver.send(ts, imu_sample(ts), seq=sent)
                if args.sync_every and (sent + 1) % args.sync_every == 0:
                    print(f"durable: {driver.sync()}")
            except (DaemonGone, ConnectionError) as e:
                # Not a refusal: the daemon is stopping or restarting. Samples it received
                # are kept; the hello reply says how many this sensor has in the current trace.
                if not reconnect(driver, args.reconnect_for, e):
                    return 1
                continue  # the sample that failed is sent again
            sent += 1
        durable = driver.sync()
        print(f"sent {sent} samples; durable: {durable}")
        return 0
    except KeyboardInterrupt:
        print(f"interrupted after {sent} samples", file=sys.stderr)
        try:
            print(f"durable: {driver.sync()}")
        except (DaemonError, OSError) as e:
            print(f"final sync failed: {e}", file=sys.stderr)
        return 130
    except DaemonError as e:
        print(f"daemon closed the session after {sent} samples were sent: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"connection lost after {sent} samples: {e}", file=sys.stderr)
        return 1
    finally:
        driver.close()


if __name__ == "__main__":
    sys.exit(main())
