"""roverlog: readers of roverd traces, GulpIO2 directories and L5Kit zarr datasets, and a
driver for the roverlog daemon, over the roverlog Rust library.

- `roverlog.Trace`, `Sensor`, `Channel`, `Nearest`: roverd traces (upstream `roverd`'s names;
  module `roverlog.trace`, formerly `roverlog.roverd`, a name that still imports).
- `roverlog.redrover`: upstream red-rover `roverd`'s reading API (`Dataset`, `Trace.from_config`,
  typed sensors, timestamp corrections): `from roverlog import redrover as roverd`. Needs
  abstract-dataloader (`pip install 'roverlog[redrover]'`); imported only when asked for.
- `roverlog.gulp.GulpDirectory`, `GulpChunk`: gulpio2's reading API (change the import).
- `roverlog.zarr.open`, `roverlog.l5kit.ChunkedDataset`: zarr-python 2's reading (its selections
  and read-only attributes too), l5kit's datasets and its `l5kit.data.filter` functions.
- `roverlog.Driver`: send samples to a running daemon (docs/protocol.md).
- `roverlog.to_dask(channel, chunk=None)`: a channel as a lazy `dask.array` chunked by
  samples (`roverlog.lazy`; needs dask).

Errors (`roverlog.errors`): everything roverlog raises about a file is a `roverlog.Error`
whose message names the file (and the channel and sample, or gulp id and frame), and is also
the builtin a caller would catch:

- `roverlog.FileError`: a `FileNotFoundError` (missing, or a file where a directory was asked);
- `roverlog.ReadError`: an `OSError` (any other failure to read a file);
- `roverlog.MissingKeyError`: a `KeyError` (no channel, sensor or id of that name);
- `roverlog.SampleIndexError`: an `IndexError` (a sample, frame or row past the end);
- `roverlog.FormatError`: a `ValueError` (corrupt, inconsistent or unsupported data: invalid
  JSON, an unknown type code, a truncated JPEG);
- `roverlog.DamagedSampleError`: a `FormatError` for a sample the sensor counts whose bytes
  are missing, cut short or do not decode (its `path` and `index`; `roverlog recover` cuts
  the sensor back to the samples before it). The channel's intact samples still read.

Threads (`roverlog.parallel`): a bulk read (a range of frames, a gulp read, zarr rows) decodes
on one thread per core, or on one thread in a worker process (a `DataLoader` worker, any
`multiprocessing` child, a process forked after the import). `roverlog.set_threads(n)` or
the environment variable `ROVERLOG_THREADS=n` (read at import) choose `n` instead;
`roverlog.threads()` says how many the next read uses.

JPEG (`roverlog.jpeg`): frames decode with libjpeg-turbo where `libturbojpeg.so.0` loads, else
with zune-jpeg (built in); `ROVERLOG_JPEG=auto|zune|turbo` (read at import) or
`roverlog.set_jpeg_decoder(name)` chooses, `roverlog.jpeg_decoder()` says which is used.
"""
from .errors import DamagedSampleError, Error, FileError, FormatError, MissingKeyError, ReadError, SampleIndexError
from . import parallel
from .parallel import set_threads, threads
from . import jpeg
from .jpeg import jpeg_decoder, set_jpeg_decoder
from . import gulp, l5kit, zarr
from .driver import DaemonWaitWarning, Driver, Durable, NotRecordingWarning
from .trace import Channel, Metadata, Nearest, Sensor, Trace
from .lazy import to_dask
from . import trace
from . import remote  # registers s3:// with Trace (read in place)
from .zarr import meta as _zarr_meta, selection as _selection, url as _zarr_url

# The modules' names before they were renamed (`roverd.py` read as upstream's `roverd`, which
# is `roverlog.redrover`; the zarr reader's parts are now the `roverlog.zarr` package): the
# same module objects under the old names, so imports and pickles that name them still work.
import sys as _sys

roverd = trace
for _old, _module in {"roverd": trace, "_zarr_meta": _zarr_meta, "_selection": _selection, "_zarr_url": _zarr_url}.items():
    _sys.modules[f"{__name__}.{_old}"] = _module
del _old, _module

parallel.configure_at_import()
jpeg.configure_at_import()

__all__ = [
    "Channel",
    "DaemonWaitWarning",
    "DamagedSampleError",
    "Driver",
    "Durable",
    "Error",
    "FileError",
    "FormatError",
    "Metadata",
    "MissingKeyError",
    "Nearest",
    "NotRecordingWarning",
    "ReadError",
    "SampleIndexError",
    "Sensor",
    "Trace",
    "jpeg_decoder",
    "set_jpeg_decoder",
    "set_threads",
    "threads",
    "to_dask",
]
