"""Timestamp corrections, as upstream `roverd.timestamps`: a sensor's receive times carry
scheduling jitter; assuming the sensor's clock is locally stable, they are smoothed.

- `identity(x)`: no correction.
- `smooth(x, interval=30.0)`: each timestamp has independent jitter (radar, camera, IMU).
  The timestamps are cut into consecutive blocks of `int(interval * len(x) / (x[-1] - x[0]))`
  samples (the last may be shorter) and each block is replaced by evenly spaced values from
  its own first to its own last timestamp.
- `discretize(x, interval=10.0, eps=0.05)`: frames come at a fixed rate but some are dropped
  (lidar). Each gap becomes a whole number of periods (`round(gap / median gap)` where that
  ratio exceeds `1.5 + eps`, else 1); in each block (sized as above from `interval`) the output
  starts at the block's first timestamp and advances by those counts times the block's span
  over their sum.

The models are core's (`crates/core/src/timestamps.rs`, through `roverlog._roverlog`): the
same arithmetic, in the same order, as upstream's, so float64 values are equal to the last
bit. Here only the refusals of this API stay: fewer than two increasing values, or an
interval that holds no sample at their rate (upstream divides by zero or loops forever
there), each a `ValueError` saying so; core's own refusals are `roverlog.FormatError`s (a
`ValueError` too). The result has `x`'s dtype.
"""
import numpy as np

from .. import _roverlog


def identity(x):
    """No correction: `x` itself."""
    return x


def _checked(x, interval):
    """`x` as float64, refused where upstream would divide by zero or loop forever."""
    x = np.asarray(x)
    if len(x) < 2 or not x[-1] > x[0]:
        raise ValueError(f"timestamps to correct need at least two increasing values ({len(x)} given)")
    if not interval * (len(x) / (x[-1] - x[0])) >= 1:
        raise ValueError(f"an interval of {interval} s holds no sample at this rate: choose a longer one")
    return np.ascontiguousarray(x, dtype=np.float64)


def smooth(x, interval=30.0):
    """Piecewise-linear smoothing over blocks of `interval` seconds (see the module)."""
    return _roverlog.smooth(_checked(x, interval), float(interval)).astype(np.asarray(x).dtype, copy=False)


def discretize(x, interval=10.0, eps=0.05):
    """Gaps rounded to whole frame periods, over blocks of `interval` seconds (see the module)."""
    out = _roverlog.discretize(_checked(x, interval), float(interval), float(eps))
    return out.astype(np.asarray(x).dtype, copy=False)


__all__ = ["identity", "smooth", "discretize"]
