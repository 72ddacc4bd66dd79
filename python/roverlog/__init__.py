"""roverlog: readers of roverd traces, GulpIO2 directories and L5Kit zarr datasets, and a
driver for the roverlog daemon, over the roverlog Rust library.

- `roverlog.Trace`, `Sensor`, `Channel`, `Nearest`: roverd traces (upstream `roverd`'s names).
- `roverlog.gulp.GulpDirectory`: gulpio2's reading API (change the import).
- `roverlog.zarr.open`, `roverlog.l5kit.ChunkedDataset`: zarr-python 2's and l5kit's reading.
- `roverlog.Driver`: send samples to a running daemon (docs/protocol.md).
- `roverlog.Error`: what the library raises besides `FileNotFoundError`, `OSError`,
  `IndexError` and `KeyError` (a `ValueError`).
"""
from ._roverlog import Error
from . import gulp, l5kit, zarr
from .driver import Driver
from .roverd import Channel, Metadata, Nearest, Sensor, Trace

__all__ = ["Channel", "Driver", "Error", "Metadata", "Nearest", "Sensor", "Trace"]
