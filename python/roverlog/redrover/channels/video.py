"""`mjpg` channels (upstream `roverd.channels.video`): an MJPEG AVI."""
import numpy as np

from ...errors import FileError
from .. import remote as _where
from .abstract import _Images, _as_iterator, _in_thread


def _cv2():
    try:
        import cv2
    except ImportError:
        raise ImportError("writing a video channel needs OpenCV: pip install opencv-python-headless") from None
    return cv2


class VideoChannel(_Images):
    """`mjpg`: an MJPEG AVI; frames decoded to RGB by roverlog's decoder, optionally resized
    to `resolution` (width, height) with OpenCV's `interp` method. `fps` (which roverlog's
    writers keep in the channel's `args` for the AVI header; upstream's VideoChannel takes no
    such argument) is accepted, kept as `self.fps`, and is `consume()`'s default rate: `ts`
    is the truth for time. Written with OpenCV's `VideoWriter` (fourcc `MJPG`), as upstream."""

    format = "mjpg"

    def __init__(self, path, dtype, shape, resolution=None, interp="area", fps=None):
        super().__init__(path, dtype, shape)
        self._images_init(resolution, interp)
        self.fps = fps

    def _args(self):
        return {"resolution": self.resolution, "interp": self.interp, "fps": self.fps}

    @_where.local_only
    def write(self, data, append=False):
        """Writes the frames of `data` (`(n, height, width, 3)` RGB), replacing the video
        (`append` is ignored, as upstream)."""
        if not isinstance(data, np.ndarray):
            raise ValueError(f"{self.path}: a video channel writes arrays, not bytes")
        self._verify_type(data)
        self.consume(iter(data))

    @_where.local_only
    def consume(self, stream, thread=False, fps=None):
        """Writes every frame of `stream` (RGB, the channel's shape) at `fps` (default: the
        channel's `fps`, else 10 as upstream), replacing the video."""
        stream = _as_iterator(stream)
        if thread:
            return _in_thread(self.consume, stream=stream, fps=fps)
        cv2 = _cv2()
        rate = fps if fps is not None else (self.fps if self.fps is not None else 10.0)
        writer = cv2.VideoWriter(self.path, cv2.VideoWriter_fourcc(*"MJPG"), rate, (self.shape[1], self.shape[0]))
        if not writer.isOpened():
            raise FileError(f"{self.path}: OpenCV cannot write an MJPEG video here")
        try:
            for frame in stream:
                if not isinstance(frame, np.ndarray):
                    raise ValueError(f"{self.path}: a video channel writes arrays, not bytes")
                self._verify_type(frame)
                writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        finally:
            writer.release()
        self.__dict__.pop("filesize", None)


__all__ = ["VideoChannel"]
