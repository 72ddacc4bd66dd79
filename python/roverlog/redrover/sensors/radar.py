"""`XWRRadar`, as upstream `roverd.sensors.radar`."""
import json
import os
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...errors import Error, FormatError
from .. import remote as _where, timestamps, types
from .generic import Sensor


@dataclass
class RadarMetadata:
    """Range (m) and doppler (m/s) resolution, each `(1,)` float32, and the timestamps."""

    range_resolution: np.ndarray
    doppler_resolution: np.ndarray
    timestamps: np.ndarray


class XWRRadar(Sensor):
    """TI xWR radar frames: `radar[i]` is a `types.XWRRadarIQ` (`iq`, `valid`, timestamps,
    and the resolutions from `radar.json`; 0 with a warning when it is missing).
    `correction="auto"` is `smooth(interval=30.)`."""

    def __init__(self, path, correction=None, past=0, future=0):
        if correction == "auto":
            correction = partial(timestamps.smooth, interval=30.0)
        super().__init__(path, correction=correction, past=past, future=future)
        cfg = os.path.join(path, "radar.json")
        try:
            if _where.is_url(cfg):
                radar = _where.read_json(cfg)
                if radar is None:
                    raise FileNotFoundError(cfg)
            else:
                with open(cfg) as f:
                    radar = json.load(f)
            dr, dd = radar["range_resolution"], radar["doppler_resolution"]
        except Error:
            raise  # the store's own (an endpoint down), not a missing file
        except KeyError as e:
            raise KeyError(f"{cfg} is missing a required key: {e}") from e
        except FileNotFoundError:
            warnings.warn(f"No `radar.json` in {path}; setting `dr=0` and `dd=0`. This may cause problems for radar processing later!")
            dr, dd = 0.0, 0.0
        except json.JSONDecodeError as e:
            raise FormatError(f"{cfg}: not valid JSON: {e}") from None
        self.metadata = RadarMetadata(
            range_resolution=np.array([dr], dtype=np.float32),
            doppler_resolution=np.array([dd], dtype=np.float32),
            timestamps=self._timestamps(),
        )

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        start = index - self.past
        return types.XWRRadarIQ(
            iq=self.channels["iq"].read(start, samples=self.window)[None],
            timestamps=self.metadata.timestamps[start:index + self.future + 1][None],
            range_resolution=self.metadata.range_resolution,
            doppler_resolution=self.metadata.doppler_resolution,
            valid=self.channels["valid"].read(start, samples=self.window)[None],
        )
