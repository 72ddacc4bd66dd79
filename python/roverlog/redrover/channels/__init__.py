"""Upstream `roverd.channels`' classes, module layout and `from_config`, reading over
roverlog's native readers and writing as upstream writes.

- `from_config(path, format, type, shape, desc=None, args={})` opens a channel by its
  `meta.json` entry; `CHANNEL_TYPES` maps each format to its class. A channel opens from
  its constructor's arguments alone (`RawChannel(path, dtype, shape)`): no `meta.json`
  beside it, no file yet when it is about to be written.
- Reading: `channel.read(start=0, samples=-1)`: `(samples, *shape)` (JPEG: `(samples, H, W,
  3)` RGB), a writable array the caller owns, as upstream's; `channel[i]` is `read(i, 1)`
  (leading axis kept); `stream(transform=None, batch=0)`, `stream_prefetch(...)`;
  `filesize`, `size` (bytes per sample), `type` (a numpy dtype), `shape`, `path`;
  `RawChannel.memmap()`. `lzma`/`lzmaf` frames and JPEG frames decode in the native library
  on every core with the GIL released.
- Writing, as upstream's classes: `write(data, append=False)` and `consume(stream,
  thread=False)` (an iterable, or a queue read until `None`; an `utils.ExceptionSentinel`
  raises) on every class, with upstream's extra arguments (`LzmaFrameChannel`: `preset=0`,
  `batch=8`; `VideoChannel.consume`: `fps`; blob channels: `append`); arrays are checked
  against the channel's type and shape (`ValueError`), bytes written as given where
  upstream allows them (`raw`, `lzma`). `lzmaf` frames compress on every core.
- `abstract` (`Channel`, `BlobChannel`) and `utils` (`Buffer`, `Prefetch`,
  `ExceptionSentinel`, `ReadableQueue`, `batch_iterator`, ...) as upstream's modules.

Where upstream reads past the end, ours gives the samples that exist (as upstream's `lzma`,
`lzmaf` and video channels do); a start outside the channel is a `roverlog.SampleIndexError`
(an `IndexError`) naming the file; a sample the sensor's `ts` counts but the file lost is a
`roverlog.DamagedSampleError` naming the file and the sample. Upstream's video channel
returns frame `start - 1` for a read starting at `start > 0` (it seeks OpenCV to
`start - 1`); ours returns frame `start`, the one whose timestamp is `ts[start]`.
"""
import numpy as np

from ...errors import FormatError, quoted, quoted_list
from . import abstract, utils
from .abstract import BlobChannel, Channel
from .blob import JPEGBlobChannel, NPZBlobChannel
from .lzma import LzmaChannel, LzmaFrameChannel
from .raw import RawChannel
from .video import VideoChannel

CHANNEL_TYPES = {
    "raw": RawChannel,
    "lzma": LzmaChannel,
    "lzmaf": LzmaFrameChannel,
    "mjpg": VideoChannel,
    "npz": NPZBlobChannel,
    "jpg": JPEGBlobChannel,
}


def from_config(path, format, type, shape, description=None, desc=None, args={}, **_other):
    """The channel at `path` described by its `meta.json` entry (`format`, `type`, `shape`);
    `args` go to the channel's constructor."""
    ctype = CHANNEL_TYPES.get(format)
    if ctype is None:
        raise FormatError(f"{path}: unknown channel format {quoted(format)} (known: {quoted_list(CHANNEL_TYPES)})")
    try:
        dtype = np.dtype("<" + type) if isinstance(type, str) and type[:1] not in "<>|=" else np.dtype(type)
    except TypeError:
        raise FormatError(f"{path}: unknown type code {quoted(type)}") from None
    return ctype(path, dtype, shape, **(args or {}))


__all__ = [
    "abstract", "utils", "Channel", "BlobChannel", "RawChannel", "LzmaChannel", "LzmaFrameChannel",
    "VideoChannel", "NPZBlobChannel", "JPEGBlobChannel", "CHANNEL_TYPES", "from_config",
]
