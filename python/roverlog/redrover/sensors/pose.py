"""`IMU` and `Pose`, as upstream `roverd.sensors.pose`."""
import io
import os
from functools import partial

import numpy as np
from abstract_dataloader.generic import Metadata

from ...errors import Error, FormatError, from_os_error
from .. import remote as _where, timestamps, types
from .generic import Sensor


class IMU(Sensor):
    """An IMU (`acc`, `rot`, `avel`), read whole when opened and cut to the shortest channel
    (a power cut can leave them of different lengths): `imu[i]` is a `types.IMUData`.
    `correction="auto"` is `smooth(interval=30.)`."""

    def __init__(self, path, correction=None, past=0, future=0):
        if correction == "auto":
            correction = partial(timestamps.smooth, interval=30.0)
        super().__init__(path, correction=correction, past=past, future=future)
        ts = self._timestamps()
        acc, rot, avel = (self.channels[k].read(start=0, samples=-1) for k in ("acc", "rot", "avel"))
        n = min(len(ts), len(acc), len(rot), len(avel))
        self.metadata = Metadata(ts[:n])
        self.imudata = types.IMUData(acc=acc[:n, None], rot=rot[:n, None], avel=avel[:n, None], timestamps=ts[:n, None])

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        w = slice(index - self.past, index + self.future + 1)
        d = self.imudata
        return types.IMUData(acc=d.acc[w, 0][None], rot=d.rot[w, 0][None], avel=d.avel[w, 0][None], timestamps=d.timestamps[w, 0][None])


class Pose(Sensor):
    """Poses computed for a reference sensor, read from `_<reference>/pose.npz` beside the
    sensor `path` names (arrays `pos`, `vel`, `acc`, `rot`, `t`): `pose[i]` is a
    `types.Pose` (float32, timestamps float64). Has no channels."""

    def __init__(self, path, reference="radar", past=0, future=0):
        npz = os.path.join(os.path.dirname(path), f"_{reference}", "pose.npz")
        try:
            source = npz
            if _where.is_url(npz):
                source = _where.read_file(npz)
                if source is None:
                    raise FileNotFoundError(2, "No such file or directory", npz)
                source = io.BytesIO(source)
            with np.load(source) as f:
                arrays = {k: f[k] for k in ("pos", "rot", "vel", "acc", "t")}
        except Error:
            raise  # the store's own, already naming where
        except KeyError as e:
            raise FormatError(f"{npz}: no array {e}") from None
        except OSError as e:
            raise from_os_error(e, npz) from None
        self.path = npz
        self.channels = {}
        self.pose = types.Pose(
            **{k: arrays[k].astype(np.float32)[:, None] for k in ("pos", "rot", "vel", "acc")},
            timestamps=arrays["t"][:, None],
        )
        self.metadata = Metadata(timestamps=self.pose.timestamps[:, 0])
        self.past = past
        self.future = future
        self.window = past + future + 1

    def __len__(self):
        return len(self.metadata.timestamps)

    def __getitem__(self, index):
        if isinstance(index, str):
            raise ValueError("Pose sensor does not support indexing by channel name.")
        w = slice(index - self.past, index + self.future + 1)
        p = self.pose
        return types.Pose(
            pos=p.pos[w, 0][None], rot=p.rot[w, 0][None], vel=p.vel[w, 0][None], acc=p.acc[w, 0][None], timestamps=p.timestamps[w, 0][None]
        )
