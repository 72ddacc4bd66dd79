"""roverlog.gulp.GulpDirectory against gulpio2 itself, on a directory gulpio2 wrote
(tests/py/gulp_write.py: three chunks, RGB and gray frames, every padding, odd ids)."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import simplejpeg
from gulpio2 import GulpDirectory as Theirs

from roverlog.gulp import GulpDirectory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def gulp(tmp_path_factory):
    d = tmp_path_factory.mktemp("gulp")
    out = str(d / "g")
    os.makedirs(out)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "py", "gulp_write.py"), out, str(d / "e.json")],
                   check=True)
    return out


def test_frames_and_meta_equal_gulpio2s(gulp):
    ours, theirs = GulpDirectory(gulp), Theirs(gulp)
    assert ours.merged_meta_dict.keys() == theirs.merged_meta_dict.keys()
    for id_, m in theirs.merged_meta_dict.items():
        assert [list(f) for f in m["frame_info"]] == ours.merged_meta_dict[id_]["frame_info"]
        assert m["meta_data"][:1] == ours.merged_meta_dict[id_]["meta_data"]
        assert ours.chunk_lookup[id_] == theirs.chunk_lookup[id_]
    raw_ours, raw_theirs = GulpDirectory(gulp, jpeg_decoder=lambda b: b), Theirs(gulp, jpeg_decoder=lambda b: b)
    for id_ in theirs.merged_meta_dict:
        n = len(theirs.merged_meta_dict[id_]["frame_info"])
        for sel in [None, slice(1, None, 2), slice(-3, None), [0, n - 1, 0], [-1]]:
            key = id_ if sel is None else (id_, sel)
            fo, mo = ours[key]
            ft, mt = theirs[key]
            assert mo == mt
            assert len(fo) == len(ft)
            bo, _ = raw_ours[key]
            bt, _ = raw_theirs[key]
            assert bo == bt, "the same JPEG bytes"
            for a, b, jpeg in zip(fo, ft, bt):
                assert a.shape == b.shape and a.dtype == b.dtype == np.uint8, (id_, a.shape, b.shape)
                accurate = simplejpeg.decode_jpeg(jpeg, colorspace="RGB" if a.ndim == 3 else "GRAY")
                accurate = accurate.reshape(a.shape)
                d = np.abs(a.astype(np.int16) - accurate.astype(np.int16))
                assert d.mean() < 1.0 and d.max() <= 40, (id_, d.mean(), d.max())


def test_iteration_by_chunk_and_pickling(gulp):
    ours, theirs = GulpDirectory(gulp), Theirs(gulp)
    assert ours.num_chunks == theirs.num_chunks == len(list(ours))
    for co, ct in zip(ours, theirs):
        got = [(m, len(f)) for f, m in co]
        want = [(m, len(f)) for f, m in ct]
        assert got == want
    again = pickle.loads(pickle.dumps(ours))
    id_ = next(iter(theirs.merged_meta_dict))
    np.testing.assert_array_equal(again[id_][0][0], ours[id_][0][0])


def test_bad_ids_and_selections_raise(gulp, tmp_path):
    ours = GulpDirectory(gulp)
    with pytest.raises(KeyError):
        ours["no such id"]
    id_ = next(iter(ours.merged_meta_dict))
    with pytest.raises(IndexError, match="out of range"):
        ours[id_, [1000]]
    with pytest.raises(TypeError):
        ours[id_, "frames"]
    with pytest.raises(TypeError):
        ours[1.5]
    with pytest.raises(FileNotFoundError):
        GulpDirectory(str(tmp_path / "missing"))


def test_frames_of_one_read_are_separate_writable_arrays(gulp):
    # The frames of a read share one block of memory (decoded in place); each must still
    # behave as gulpio2's own array: C-contiguous, writable, its writes seen by no other frame.
    ours = GulpDirectory(gulp)
    for id_ in ours.merged_meta_dict:
        frames, _ = ours[id_]
        if len(frames) < 2:
            continue
        again, _ = ours[id_]
        for f in frames:
            assert f.flags.c_contiguous and f.flags.writeable
        frames[0][...] = 255 - frames[0]
        for f, g in zip(frames[1:], again[1:]):
            np.testing.assert_array_equal(f, g)
        assert not np.array_equal(frames[0], again[0])


def test_a_corrupt_frame_is_an_error(gulp, tmp_path):
    import shutil

    import roverlog

    bad = str(tmp_path / "bad")
    shutil.copytree(gulp, bad)
    ours = GulpDirectory(bad)
    id_ = next(iter(ours.merged_meta_dict))
    chunk = ours.chunk_objs_lookup[ours.chunk_lookup[id_]]
    loc = ours.merged_meta_dict[id_]["frame_info"][-1][0]
    with open(chunk.data_file_path, "r+b") as f:
        f.seek(loc)
        f.write(b"\0\0\0\0")  # no SOI marker: not a JPEG
    ours = GulpDirectory(bad)
    with pytest.raises(roverlog.Error, match="jpeg"):
        ours[id_]
    # The other frames still decode on their own.
    frames, _ = ours[id_, [0]]
    assert frames[0].dtype == np.uint8
