"""`Camera` and `Semseg`, as upstream `roverd.sensors.camera`."""
from functools import partial

from abstract_dataloader import generic

from .. import timestamps, types
from .generic import Sensor


class Camera(Sensor):
    """An RGB camera: `camera[i]` is a `types.CameraData` from channel `key` (an `mjpg`
    video or `jpg` frames), resized on reading to `resolution` (width, height) with OpenCV's
    `interp` method when given. `correction="auto"` is `smooth(interval=30.)`."""

    def __init__(self, path, key="video.avi", correction=None, past=0, future=0, resolution=None, interp="area"):
        if correction == "auto":
            correction = partial(timestamps.smooth, interval=30.0)
        super().__init__(
            path, correction=correction, past=past, future=future,
            args={key: {"resolution": resolution, "interp": interp}},
        )
        self.metadata = generic.Metadata(timestamps=self._timestamps())
        self.key = key

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        return types.CameraData(
            image=self.channels[self.key].read(index - self.past, samples=self.window)[None],
            timestamps=self.metadata.timestamps[index - self.past:index + self.future + 1][None],
        )


class Semseg(Sensor):
    """Camera semantic segmentation: `semseg[i]` is a `types.CameraSemseg` from channel
    `key`. `correction="auto"` is `smooth(interval=30.)`."""

    def __init__(self, path, key="segment", correction=None, past=0, future=0):
        if correction == "auto":
            correction = partial(timestamps.smooth, interval=30.0)
        super().__init__(path, correction=correction, past=past, future=future)
        self.metadata = generic.Metadata(timestamps=self._timestamps())
        self.key = key

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.channels[index]
        return types.CameraSemseg(
            semseg=self.channels[self.key].read(index - self.past, samples=self.window)[None],
            timestamps=self.metadata.timestamps[index - self.past:index + self.future + 1][None],
        )
