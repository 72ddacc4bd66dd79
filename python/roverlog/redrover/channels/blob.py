"""Blob channels (upstream `roverd.channels.blob`): `npz` and `jpg` directories."""
import numpy as np

from ...errors import FormatError
from .abstract import BlobChannel, _Images


class NPZBlobChannel(BlobChannel):
    """`npz`: one `.npz` per sample, its array named `data` (`compress=True`:
    `np.savez_compressed`, as upstream)."""

    format = "npz"
    ext = "npz"

    def __init__(self, path, dtype, shape, workers=8, length=None, compress=False):
        super().__init__(path, dtype, shape, workers, length)
        self.compress = compress

    def _args(self):
        return {"workers": self.workers, "compress": self.compress}

    def _decode(self, frames):
        if isinstance(frames, list):
            if not frames:
                return np.empty((0, *self.shape), self.type)
            raise FormatError(f"{self.path}: the samples have different shapes: {sorted({f.shape for f in frames})}")
        return frames

    def _write_blob(self, index, data):
        save = np.savez_compressed if self.compress else np.savez
        save(self._filename(index) + ".npz", data=data)


class JPEGBlobChannel(BlobChannel, _Images):
    """`jpg`: one JPEG per sample, decoded to RGB (`resolution`/`interp` as `VideoChannel`'s,
    which upstream's JPEG channel does not take); written with OpenCV's `imwrite` from RGB,
    as upstream."""

    format = "jpg"
    ext = "jpg"

    def __init__(self, path, dtype, shape, workers=8, length=None, resolution=None, interp="area"):
        BlobChannel.__init__(self, path, dtype, shape, workers, length)
        self._images_init(resolution, interp)

    def _args(self):
        return {"workers": self.workers, "resolution": self.resolution, "interp": self.interp}

    def _write_blob(self, index, data):
        import cv2

        name = self._filename(index) + ".jpg"
        if not cv2.imwrite(name, cv2.cvtColor(data, cv2.COLOR_RGB2BGR)):
            raise FormatError(f"{name}: OpenCV could not write the image (sample {index})")


__all__ = ["NPZBlobChannel", "JPEGBlobChannel"]
