"""A drop-in for gulpio2's reading API over the roverlog library:

    from roverlog.gulp import GulpDirectory      # was: from gulpio2 import GulpDirectory
    gd = GulpDirectory("/data/gulp")
    frames, meta = gd["video-id"]                # frames: list of HxWx3 uint8 (HxW for gray)
    frames, meta = gd["video-id", 1:10:2]
    frames, meta = gd["video-id", [1, 5]]
    for chunk in gd:
        for frames, meta in chunk:
            ...
    from roverlog.gulp import GulpChunk          # one chunk alone, as gulpio2 makes it
    chunk = GulpChunk("/data/gulp/data_0.gulp", "/data/gulp/meta_0.gmeta")
    frames, meta = chunk.read_frames("video-id", [0, 2])

Frames are decoded natively on every core with the GIL released (gulpio2 decodes with
simplejpeg's fast DCT; pixels differ by a little, within a JPEG decoder's tolerance). The
frames of one read are views of one block of memory (each `HxWx3`, C-contiguous and
writable, like gulpio2's); keeping one frame keeps that read's block alive.
`jpeg_decoder=` is honoured as in gulpio2 (called on each frame's JPEG bytes) when given.
Only `meta_data[0]` of each id is kept (what gulpio2's reads return). Objects pickle by path.
Read-only: the writing methods (`append`, `flush`, `new_chunks`, `open("wb")`) are refused.
Errors name the directory (or chunk file), the id and the frame (`roverlog.errors`): an unknown id is a
`MissingKeyError` (a `KeyError`), a frame that does not decode (a truncated JPEG) a
`FormatError` (a `ValueError`).
"""
import builtins
import json
import os
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np

from . import _roverlog
from .errors import FormatError, MissingKeyError, from_os_error, quoted


def _split(element):
    if isinstance(element, tuple) and len(element) == 2:
        id_, slice_ = element
    elif isinstance(element, (int, str)):
        id_, slice_ = element, None
    else:
        raise TypeError("Undefined input type! id or (id, slice) expected")
    return str(id_), slice_


class _Reader:
    """A native reader (a directory, or one chunk) with each id's frame count and metadata
    in gulpio2's form (`frame_info` as `[loc, pad, length]` lists, `meta_data[:1]`)."""

    def __init__(self, native, where):
        self.native, self.where = native, where
        videos = native.videos()
        self.frames = {i: n for i, _, n in videos}
        self.chunk_of = {i: c for i, c, _ in videos}
        self.meta = {}
        for i, _, _ in videos:
            m = json.loads(native.meta_json(i))
            self.meta[i] = OrderedDict([("frame_info", m["frame_info"]), ("meta_data", m["meta_data"])])

    def read(self, id_, slice_, jpeg_decoder):
        if id_ not in self.frames:
            raise MissingKeyError(f"{self.where}: no id {quoted(id_)}")
        n = self.frames[id_]
        if slice_ is None:
            idx = list(range(n))
        elif isinstance(slice_, slice):
            idx = list(range(n)[slice_])
        elif isinstance(slice_, (list, tuple, np.ndarray)):
            idx = [int(i) for i in slice_]
        else:
            raise TypeError(f"frames are selected by a slice or a list of ints, not {type(slice_).__name__}")
        if jpeg_decoder is not None:
            frames = [jpeg_decoder(b) for b in self.native.read(id_, idx, False)]
        else:
            # One block of pixels for the whole read, decoded natively; each frame is a view
            # of its part (writable, sharing the block, so a kept frame keeps the block alive).
            block, placed = self.native.read(id_, idx, True)
            frames = [
                block[o:o + h * w * c].reshape((h, w) if c == 1 else (h, w, c))
                for o, h, w, c in placed
            ]
        meta = self.meta[id_]["meta_data"]
        if not meta:
            raise FormatError(f"{self.where}: id {quoted(id_)}: meta_data is empty")
        return frames, dict(meta[0])


def _read_only(what):
    return ValueError(f"{what}: roverlog.gulp reads gulp files; writing them needs gulpio2")


class GulpChunk:
    """One chunk pair, `data_<n>.gulp` + `meta_<n>.gmeta`, with gulpio2's reading API:

        chunk = GulpChunk("g/data_0.gulp", "g/meta_0.gmeta")   # as gulpio2 users make one
        with chunk.open():                                      # optional here
            frames, meta = chunk.read_frames("video-id", slice(0, 8))
        for frames, meta in chunk.iter_all(accepted_ids=["a", "b"], shuffle=True):
            ...

    `meta_dict` is id -> {"frame_info", "meta_data"} in file order. The metadata is read as
    JSON, gulpio2's default; its pickle serializer is not supported. Reads need no
    `open()` (gulpio2's do); `open("rb")` is accepted and opens `fp`, writing modes are
    refused. An unknown id is a `MissingKeyError` naming the meta file (gulpio2 fails with
    a `TypeError` unpacking `None`).
    """

    def __init__(self, data_file_path, meta_file_path, serializer=None, jpeg_decoder=None):
        if serializer is not None and type(serializer).__name__ != "JSONSerializer":
            raise ValueError(f"{meta_file_path}: roverlog.gulp reads JSON metadata only, not with {quoted(serializer)}")
        self.data_file_path = os.fspath(data_file_path)
        self.meta_file_path = os.fspath(meta_file_path)
        reader = _Reader(_roverlog.GulpDir.chunk(self.data_file_path, self.meta_file_path), self.meta_file_path)
        self._setup(reader, list(reader.frames), serializer, jpeg_decoder)

    @classmethod
    def _of_directory(cls, reader, data_file_path, meta_file_path, ids, jpeg_decoder):
        chunk = cls.__new__(cls)
        chunk.data_file_path, chunk.meta_file_path = os.fspath(data_file_path), os.fspath(meta_file_path)
        chunk._setup(reader, ids, None, jpeg_decoder)
        return chunk

    def _setup(self, reader, ids, serializer, jpeg_decoder):
        self._reader, self._ids = reader, ids
        self._id_set = set(ids)
        self.serializer, self.jpeg_decoder = serializer, jpeg_decoder
        self.meta_dict = OrderedDict((i, reader.meta[i]) for i in ids)
        self.fp = None

    def __reduce__(self):
        return (GulpChunk, (self.data_file_path, self.meta_file_path, self.serializer, self.jpeg_decoder))

    def __repr__(self):
        return f"<roverlog.gulp.GulpChunk {self.data_file_path!r}>"

    def __contains__(self, id_):
        return str(id_) in self._id_set

    def __getitem__(self, element):
        return self.read_frames(*_split(element))

    def __iter__(self):
        return self.iter_all()

    def __len__(self):
        return len(self._ids)

    @contextmanager
    def open(self, flag="rb"):
        """gulpio2's `with chunk.open():`; reads work without it."""
        if flag in ("wb", "ab"):
            raise _read_only(self.data_file_path)
        if flag != "rb":
            raise NotImplementedError(f"This file does not support the mode: '{flag}'")
        try:
            self.fp = builtins.open(self.data_file_path, "rb")
        except OSError as e:
            raise from_os_error(e, self.data_file_path) from None
        try:
            yield
        finally:
            self.fp.close()

    def append(self, id_, meta_data, frames):
        raise _read_only(self.data_file_path)

    def flush(self):
        raise _read_only(self.data_file_path)

    def read_frames(self, id_, slice_=None):
        """`(frames, meta)` of `id_`: every frame, or those `slice_` (a slice or a list of
        indices) selects."""
        id_ = str(id_)
        if id_ not in self._id_set:
            raise MissingKeyError(f"{self.meta_file_path}: no id {quoted(id_)}")
        return self._reader.read(id_, slice_, self.jpeg_decoder)

    def iter_all(self, accepted_ids=None, shuffle=False):
        """`(frames, meta)` of every id in file order, or only `accepted_ids` (as gulpio2:
        compared with the ids as they are, strings), or shuffled with `np.random`."""
        ids = list(self._ids)
        if accepted_ids is not None:
            keep = set(ids) & set(accepted_ids)
            ids = [i for i in ids if i in keep]
        if shuffle:
            np.random.shuffle(ids)
        for id_ in ids:
            yield self.read_frames(id_)


class GulpDirectory:
    """A GulpIO2 directory, read-only, with gulpio2's reading API."""

    def __init__(self, output_dir, jpeg_decoder=None):
        self.output_dir = os.fspath(output_dir)
        self.jpeg_decoder = jpeg_decoder
        native = _roverlog.GulpDir(self.output_dir)
        self._reader = _Reader(native, self.output_dir)
        self.chunk_lookup = dict(self._reader.chunk_of)
        self.merged_meta_dict = dict(self._reader.meta)
        self.chunk_objs_lookup = OrderedDict()
        for number, data, meta in native.chunks():
            ids = [i for i, c in self._reader.chunk_of.items() if c == number]
            self.chunk_objs_lookup[number] = GulpChunk._of_directory(self._reader, data, meta, ids, jpeg_decoder)
        self.all_meta_dicts = [c.meta_dict for c in self.chunk_objs_lookup.values()]
        self.num_chunks = len(self.chunk_objs_lookup)

    def __reduce__(self):
        return (GulpDirectory, (self.output_dir, self.jpeg_decoder))

    def __iter__(self):
        return iter(self.chunk_objs_lookup.values())

    def chunks(self):
        return self.__iter__()

    def new_chunks(self, total_new_chunks):
        raise _read_only(self.output_dir)

    def __len__(self):
        return len(self._reader.frames)

    def __getitem__(self, element):
        id_, slice_ = _split(element)
        return self._reader.read(id_, slice_, self.jpeg_decoder)
