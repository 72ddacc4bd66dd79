"""roverlog.gulp.GulpDirectory and GulpChunk against gulpio2 itself, on directories gulpio2 wrote
(tests/py/gulp_write.py: three chunks, RGB and gray frames, every padding, odd ids; and
tests/data/gulp_small)."""
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

# Every test here decodes frames: each runs on zune-jpeg and on libjpeg-turbo.
pytestmark = pytest.mark.usefixtures("each_jpeg_decoder")


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


def _chunk_pairs(d):
    """`(data, meta)` paths of every chunk of `d`, as gulpio2's GulpDirectory pairs them."""
    return [(c.data_file_path, c.meta_file_path) for c in Theirs(d).chunk_objs_lookup.values()]


@pytest.mark.parametrize("where", ["fixture", "written"])
def test_a_chunk_alone_reads_as_gulpio2s(where, gulp):
    from gulpio2.fileio import GulpChunk as TheirChunk
    from gulpio2.utils import jpeg_bytes_to_img

    from roverlog.gulp import GulpChunk

    d = os.path.join(ROOT, "tests", "data", "gulp_small") if where == "fixture" else gulp
    pairs = _chunk_pairs(d)
    assert len(pairs) >= 2
    for data, meta in pairs:
        ours, theirs = GulpChunk(data, meta), TheirChunk(data, meta)
        raw_ours = GulpChunk(data, meta, jpeg_decoder=lambda b: b)
        raw_theirs = TheirChunk(data, meta, jpeg_decoder=lambda b: b)
        same_decoder = GulpChunk(data, meta, jpeg_decoder=jpeg_bytes_to_img)
        assert (ours.data_file_path, ours.meta_file_path) == (theirs.data_file_path, theirs.meta_file_path)
        assert list(ours.meta_dict) == list(theirs.meta_dict)
        for id_, m in theirs.meta_dict.items():
            assert ours.meta_dict[id_]["frame_info"] == [list(f) for f in m["frame_info"]]
            assert ours.meta_dict[id_]["meta_data"] == m["meta_data"][:1]
            assert id_ in ours and (id_ + "?" in ours) == (id_ + "?" in theirs)
            if id_.isdigit() and str(int(id_)) == id_:
                assert int(id_) in ours and int(id_) in theirs
            n = len(m["frame_info"])
            with theirs.open(), raw_theirs.open():
                for sel in [None, slice(1, None, 2), slice(-3, None), [0, n - 1, 0], [-1], np.array([n - 1, 0])]:
                    fo, mo = ours.read_frames(id_, sel)
                    ft, mt = theirs.read_frames(id_, sel)
                    assert mo == mt and len(fo) == len(ft), (id_, sel)
                    bt = raw_theirs.read_frames(id_, sel)[0]
                    assert raw_ours.read_frames(id_, sel)[0] == bt, "the same JPEG bytes"
                    for a, b in zip(same_decoder.read_frames(id_, sel)[0], ft):
                        np.testing.assert_array_equal(a, b)
                    for a, b, jpeg in zip(fo, ft, bt):
                        assert a.shape == b.shape and a.dtype == b.dtype, (id_, a.shape, b.shape)
                        accurate = simplejpeg.decode_jpeg(jpeg, colorspace="RGB" if a.ndim == 3 else "GRAY")
                        d_ = np.abs(a.astype(np.int16) - accurate.reshape(a.shape).astype(np.int16))
                        assert d_.mean() < 1.0 and d_.max() <= 40, (id_, d_.mean(), d_.max())
                key = (int(id_) if id_.isdigit() and str(int(id_)) == id_ else id_, slice(0, 2))
                assert raw_ours[key] == raw_theirs[key]
        # Iteration: every id in file order, a filter (gulpio2 compares ids as they are, so
        # an int matches nothing), a seeded shuffle.
        ids = list(theirs.meta_dict)
        for kwargs in [{}, {"accepted_ids": ids[::2] + ["nope"]}, {"accepted_ids": [int(i) for i in ids if i.isdigit()]},
                       {"shuffle": True}]:
            np.random.seed(5)
            got = [(m, f) for f, m in raw_ours.iter_all(**kwargs)]
            np.random.seed(5)
            want = [(m, f) for f, m in raw_theirs.iter_all(**kwargs)]
            assert got == want, kwargs
        assert [m for _, m in raw_ours] == [m for _, m in raw_theirs]
        # `open()` as gulpio2 users write it: fp open inside, closed after.
        with ours.open():
            assert not ours.fp.closed and ours.read_frames(ids[0], [0])[0][0].dtype == np.uint8
        assert ours.fp.closed
        again = pickle.loads(pickle.dumps(ours))
        for a, b in zip(again.read_frames(ids[-1])[0], ours.read_frames(ids[-1])[0]):
            np.testing.assert_array_equal(a, b)


def test_a_directorys_chunks_are_gulpio2s_chunks(gulp):
    from roverlog.gulp import GulpChunk

    ours, theirs = GulpDirectory(gulp, jpeg_decoder=lambda b: b), Theirs(gulp, jpeg_decoder=lambda b: b)
    assert [(c.data_file_path, c.meta_file_path) for c in ours.chunks()] == _chunk_pairs(gulp)
    for co, ct in zip(ours.chunks(), theirs.chunks()):
        assert isinstance(co, GulpChunk) and list(co.meta_dict) == list(ct.meta_dict)
        with ct.open():
            for id_ in ct.meta_dict:
                assert co[id_] == ct[id_]
    assert [len(m) for m in ours.all_meta_dicts] == [len(m) for m in theirs.all_meta_dicts]


def test_a_chunk_refuses_writes_and_names_what_is_wrong(gulp, tmp_path):
    import roverlog
    from roverlog.gulp import GulpChunk

    data, meta = _chunk_pairs(gulp)[0]
    c = GulpChunk(data, meta)
    for write in [lambda: c.open("wb").__enter__(), lambda: c.open("ab").__enter__(), lambda: c.append("x", {}, []),
                  c.flush, lambda: GulpDirectory(gulp).new_chunks(1)]:
        with pytest.raises(ValueError, match="roverlog.gulp reads"):
            write()
    with pytest.raises(NotImplementedError):
        c.open("r+").__enter__()
    with pytest.raises(roverlog.MissingKeyError, match=f"{meta}: no id 'nope'"):
        c.read_frames("nope")
    with pytest.raises(roverlog.FileError, match=str(tmp_path / "none.gulp")):
        GulpChunk(str(tmp_path / "none.gulp"), meta)
    with pytest.raises(roverlog.FileError, match=str(tmp_path / "none.gmeta")):
        GulpChunk(data, str(tmp_path / "none.gmeta"))
    short = tmp_path / "short.gulp"
    with open(data, "rb") as f:
        short.write_bytes(f.read()[:100])
    with pytest.raises(roverlog.FormatError, match="short.gulp"):
        GulpChunk(str(short), meta)
