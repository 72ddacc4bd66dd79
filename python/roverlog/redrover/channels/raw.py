"""`raw` channels (upstream `roverd.channels.raw`): samples back to back, little-endian."""
import os

import numpy as np

from ...errors import FormatError, SampleIndexError, from_os_error
from .. import remote as _where
from .abstract import Channel, _as_iterator, _in_thread


class RawChannel(Channel):
    """`raw`: samples back to back. `write(data, append=False)`, `consume(stream)`,
    `memmap()`."""

    format = "raw"

    def _open_w(self, append):
        return open(self.path, "ab" if append else "wb")

    def read(self, start=0, samples=-1):
        if self.format != "raw" or self.size == 0 or _where.is_url(self.path):
            return super().read(start, samples)
        # As upstream: one open, seek and read into memory the caller owns (a map per read
        # costs more than the copy for the few samples a `trace[i]` reads).
        start = int(start)
        try:
            with open(self.path, "rb", buffering=0) as f:
                n = os.fstat(f.fileno()).st_size // self.size
                count = n - start if samples == -1 else min(int(samples), n - start)
                if samples != -1 and start > n >= 0 and samples > 0:
                    count = 0  # short of what was asked: see below
                elif start < 0 or start > n or count < 0:
                    raise SampleIndexError(f"{self.path}: samples from {start} out of range (channel holds {n})")
                buf = bytearray(count * self.size)
                f.seek(start * self.size)
                got = f.readinto(buf) if count else 0
        except OSError as e:
            raise from_os_error(e, self.path) from None
        if got != len(buf):
            raise FormatError(f"{self.path}: {got} bytes where {len(buf)} were (the file shrank while read)")
        if samples != -1 and count < samples:
            # Short of what was asked: the native reader says whether the sensor's `ts`
            # counts the missing samples (a file cut by a crash: `DamagedSampleError` naming
            # the file and the first of them) or the read ran past the end (what exists).
            return super().read(start, samples)
        return np.frombuffer(buf, self.type).reshape(count, *self.shape)

    @_where.local_only
    def memmap(self):
        """The whole channel as a read-only `np.memmap`."""
        return np.memmap(self.path, dtype=self.type, mode="r", shape=(self.filesize // self.size, *self.shape))

    @_where.local_only
    def write(self, data, append=False):
        """Writes `data` (samples of the channel's type and shape, or bytes as they are),
        replacing the file, or after what it holds with `append=True`."""
        self._verify_type(data)
        try:
            with self._open_w(append) as f:
                f.write(self._serialize(data))
        except OSError as e:
            raise from_os_error(e, self.path) from None
        self.__dict__.pop("filesize", None)

    @_where.local_only
    def consume(self, stream, thread=False):
        """Writes every item of `stream` (an iterable, or a queue read until `None`), in
        order, replacing the file; `thread=True`: in a thread, returning at once."""
        stream = _as_iterator(stream)
        if thread:
            return _in_thread(self.consume, stream=stream)
        try:
            with self._open_w(False) as f:
                for data in stream:
                    self._verify_type(data)
                    f.write(self._serialize(data))
        except OSError as e:
            raise from_os_error(e, self.path) from None
        self.__dict__.pop("filesize", None)


__all__ = ["RawChannel"]
