"""A drop-in for gulpio2's reading API over the roverlog library:

    from roverlog.gulp import GulpDirectory      # was: from gulpio2 import GulpDirectory
    gd = GulpDirectory("/data/gulp")
    frames, meta = gd["video-id"]                # frames: list of HxWx3 uint8 (HxW for gray)
    frames, meta = gd["video-id", 1:10:2]
    frames, meta = gd["video-id", [1, 5]]
    for chunk in gd:
        for frames, meta in chunk:
            ...

Frames are decoded natively on every core with the GIL released (gulpio2 decodes with
simplejpeg's fast DCT; pixels differ by a little, within a JPEG decoder's tolerance). The
frames of one read are views of one block of memory (each `HxWx3`, C-contiguous and
writable, like gulpio2's); keeping one frame keeps that read's block alive.
`jpeg_decoder=` is honoured as in gulpio2 (called on each frame's JPEG bytes) when given.
Only `meta_data[0]` of each id is kept (what gulpio2's reads return). Objects pickle by path.
Errors name the directory, the id and the frame (`roverlog.errors`): an unknown id is a
`MissingKeyError` (a `KeyError`), a frame that does not decode (a truncated JPEG) a
`FormatError` (a `ValueError`).
"""
import json
import os
from collections import OrderedDict

import numpy as np

from . import _roverlog
from .errors import FormatError, MissingKeyError


def _split(element):
    if isinstance(element, tuple) and len(element) == 2:
        id_, slice_ = element
    elif isinstance(element, (int, str)):
        id_, slice_ = element, None
    else:
        raise TypeError("Undefined input type! id or (id, slice) expected")
    return str(id_), slice_


class _Info:
    """A frame_info entry, with gulpio2's attribute names."""

    __slots__ = ("loc", "pad", "length")

    def __init__(self, loc, pad, length):
        self.loc, self.pad, self.length = loc, pad, length


class GulpChunk:
    """The ids of one chunk (`data_<n>.gulp` + `meta_<n>.gmeta`)."""

    def __init__(self, directory, number, data_file_path, meta_file_path, ids):
        self._dir = directory
        self.number = number
        self.data_file_path = data_file_path
        self.meta_file_path = meta_file_path
        self._ids = ids

    @property
    def meta_dict(self):
        return OrderedDict((i, self._dir.merged_meta_dict[i]) for i in self._ids)

    def __contains__(self, id_):
        return str(id_) in self._ids

    def __getitem__(self, element):
        return self.read_frames(*_split(element))

    def __iter__(self):
        return self.iter_all()

    def __len__(self):
        return len(self._ids)

    def read_frames(self, id_, slice_=None):
        id_ = str(id_)
        if id_ not in self._ids:
            raise MissingKeyError(f"{self.meta_file_path}: no id {id_!r}")
        return self._dir._read(id_, slice_)

    def iter_all(self, accepted_ids=None, shuffle=False):
        ids = list(self._ids)
        if accepted_ids is not None:
            keep = set(map(str, accepted_ids))
            ids = [i for i in ids if i in keep]
        if shuffle:
            np.random.shuffle(ids)
        for id_ in ids:
            yield self._dir._read(id_, None)


class GulpDirectory:
    """A GulpIO2 directory, read-only, with gulpio2's reading API."""

    def __init__(self, output_dir, jpeg_decoder=None):
        self.output_dir = os.fspath(output_dir)
        self.jpeg_decoder = jpeg_decoder
        self._native = _roverlog.GulpDir(self.output_dir)
        videos = self._native.videos()
        self._frames = {i: n for i, _, n in videos}
        self.chunk_lookup = {i: c for i, c, _ in videos}
        self.merged_meta_dict = {}
        for i, _, _ in videos:
            m = json.loads(self._native.meta_json(i))
            self.merged_meta_dict[i] = OrderedDict(
                [("frame_info", m["frame_info"]), ("meta_data", m["meta_data"])]
            )
        self.chunk_objs_lookup = OrderedDict()
        for number, data, meta in self._native.chunks():
            ids = [i for i, c, _ in videos if c == number]
            self.chunk_objs_lookup[number] = GulpChunk(self, number, os.fspath(data), os.fspath(meta), ids)
        self.all_meta_dicts = [c.meta_dict for c in self.chunk_objs_lookup.values()]
        self.num_chunks = len(self.chunk_objs_lookup)

    def __reduce__(self):
        return (GulpDirectory, (self.output_dir, self.jpeg_decoder))

    def __iter__(self):
        return iter(self.chunk_objs_lookup.values())

    def chunks(self):
        return self.__iter__()

    def __len__(self):
        return len(self._frames)

    def __getitem__(self, element):
        return self._read(*_split(element))

    def _read(self, id_, slice_):
        if id_ not in self._frames:
            raise MissingKeyError(f"{self.output_dir}: no id {id_!r}")
        n = self._frames[id_]
        if slice_ is None:
            idx = list(range(n))
        elif isinstance(slice_, slice):
            idx = list(range(n)[slice_])
        elif isinstance(slice_, (list, tuple, np.ndarray)):
            idx = [int(i) for i in slice_]
        else:
            raise TypeError(f"frames are selected by a slice or a list of ints, not {type(slice_).__name__}")
        if self.jpeg_decoder is not None:
            frames = [self.jpeg_decoder(b) for b in self._native.read(id_, idx, False)]
        else:
            # One block of pixels for the whole read, decoded natively; each frame is a view
            # of its part (writable, sharing the block, so a kept frame keeps the block alive).
            block, placed = self._native.read(id_, idx, True)
            frames = [
                block[o:o + h * w * c].reshape((h, w) if c == 1 else (h, w, c))
                for o, h, w, c in placed
            ]
        meta = self.merged_meta_dict[id_]["meta_data"]
        if not meta:
            raise FormatError(f"{self.output_dir}: id {id_!r}: meta_data is empty")
        return frames, dict(meta[0])
