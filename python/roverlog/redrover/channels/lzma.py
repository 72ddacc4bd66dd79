"""`lzma` and `lzmaf` channels (upstream `roverd.channels.lzma`)."""
import collections
import lzma
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...errors import from_os_error
from .. import remote as _where
from .abstract import Channel, _as_iterator, _in_thread
from .raw import RawChannel


class LzmaChannel(RawChannel):
    """`lzma`: the whole channel one `.xz` stream (written with Python's `lzma.open`, as
    upstream's; no `append`)."""

    format = "lzma"

    def _open_w(self, append):
        return lzma.open(self.path, "ab" if append else "wb")

    def write(self, data, append=False):
        if append:
            raise ValueError(f"{self.path}: an lzma channel is written whole (append=True is not supported, as upstream)")
        super().write(data, append=False)


def _threads():
    return max(1, min(len(os.sched_getaffinity(0)), 32))


class LzmaFrameChannel(Channel):
    """`lzmaf`: each sample its own `.xz` frame, the frames' end offsets (after a first 0)
    as little-endian `u8` in `<path>_i`. Written as upstream writes it (`lzma.compress` of
    each sample at `preset`, default 0); the frames compress on every core (Python's `lzma`
    releases the GIL), a bounded number in flight, written in order."""

    format = "lzmaf"

    @_where.local_only
    def write(self, data, append=False, preset=0):
        """Writes `(n, *shape)` samples, replacing the channel (no `append`, as upstream)."""
        if not isinstance(data, np.ndarray):
            raise ValueError(f"{self.path}: an lzmaf channel writes arrays, not bytes")
        self._verify_type(data)
        if append:
            raise ValueError(f"{self.path}: an lzmaf channel is written whole (append=True is not supported, as upstream)")
        self.consume(data, preset=preset)

    @_where.local_only
    def consume(self, stream, thread=False, preset=0, batch=8):
        """Writes every sample of `stream` as a frame, replacing the channel. `batch=0`: the
        stream's items are already sequences of samples; otherwise each item is one frame
        (`batch` only sized upstream's compression batches; here frames compress on a pool
        of threads whatever it is)."""
        stream = _as_iterator(stream)
        if thread:
            return _in_thread(self.consume, stream=stream, preset=preset, batch=batch)
        frames = stream if batch != 0 else (x for group in stream for x in group)

        def compressed(frame):
            return lzma.compress(self._serialize(frame), preset=preset)

        threads = _threads()
        try:
            with open(self.path, "wb") as data, open(self.path + "_i", "wb") as index, \
                    ThreadPoolExecutor(threads) as pool:
                tail = 0
                index.write(np.uint64(0).tobytes())
                pending = collections.deque()

                def drain(keep):
                    nonlocal tail
                    while len(pending) > keep:
                        blob = pending.popleft().result()
                        data.write(blob)
                        tail += len(blob)
                        index.write(np.uint64(tail).tobytes())

                for frame in frames:
                    if not isinstance(frame, np.ndarray):
                        raise ValueError(f"{self.path}: an lzmaf channel writes arrays, not bytes")
                    self._verify_type(frame)
                    pending.append(pool.submit(compressed, frame))
                    drain(2 * threads)
                drain(0)
        except OSError as e:
            raise from_os_error(e, self.path) from None
        self.__dict__.pop("filesize", None)


__all__ = ["LzmaChannel", "LzmaFrameChannel"]
