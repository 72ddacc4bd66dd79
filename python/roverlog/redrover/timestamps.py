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

Same arithmetic, in the same order, as upstream's, so the values are equal to the last bit.
"""
import numpy as np


def identity(x):
    """No correction: `x` itself."""
    return x


def _blocksize(x, interval):
    """Samples per block; a clear error where upstream would divide by zero or loop forever."""
    if len(x) < 2 or not x[-1] > x[0]:
        raise ValueError(f"timestamps to correct need at least two increasing values ({len(x)} given)")
    blocksize = int(interval * (len(x) / (x[-1] - x[0])))
    if blocksize < 1:
        raise ValueError(f"an interval of {interval} s holds no sample at this rate: choose a longer one")
    return blocksize


def smooth(x, interval=30.0):
    """Piecewise-linear smoothing over blocks of `interval` seconds (see the module)."""
    blocksize = _blocksize(x, interval)
    start = 0
    out = np.zeros(x.shape, x.dtype)
    while x.shape[0] > 0:
        end = min(blocksize, x.shape[0])
        out[start:start + end] = np.linspace(x[0], x[end - 1], end)
        x = x[end:]
        start += end
    return out


def discretize(x, interval=10.0, eps=0.05):
    """Gaps rounded to whole frame periods, over blocks of `interval` seconds (see the module)."""
    blocksize = _blocksize(x, interval)
    continuous = np.diff(x)
    step = np.median(continuous)
    discrete = np.where(continuous / step > 1.5 + eps, np.round(continuous / step), 1.0)
    start = 0
    out = np.zeros(x.shape, x.dtype)
    while x.shape[0] > 0:
        end = min(blocksize, x.shape[0])
        with np.errstate(invalid="ignore"):  # a last block of one sample: 0 / 0, unused
            stepsize = (x[end - 1] - x[0]) / np.sum(discrete[:end - 1])
        out[start:start + end] = np.concatenate([np.array([0.0]), np.cumsum(discrete[:end - 1]) * stepsize]) + x[0]
        x = x[end:]
        discrete = discrete[end:]
        start += end
    return out


__all__ = ["identity", "smooth", "discretize"]
