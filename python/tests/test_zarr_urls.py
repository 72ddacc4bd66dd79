"""`roverlog.zarr.open` takes the URLs zarr-python 2 opens (issue 36): `file://` (with and
without `localhost`) and `memory://` (fsspec's in-process filesystem), each read equal to
zarr-python 2's reading of the same data; other schemes and an empty memory path are
refused naming the URL."""
import numpy as np
import pytest
import zarr as zarr2

import roverlog
import roverlog.zarr as rz


def written(store):
    root = zarr2.open_group(store, mode="w")
    a = root.create_dataset("frames", data=np.arange(600, dtype="<i4").reshape(60, 10), chunks=(7, 10))
    a.attrs["unit"] = "m"
    root.create_dataset("agents/pos", data=np.linspace(0, 1, 90, dtype="<f8").reshape(30, 3), chunks=(8, 3))
    return root


def same(ours, theirs):
    assert sorted(ours.array_keys()) == sorted(theirs.array_keys())
    np.testing.assert_array_equal(ours["frames"][:], theirs["frames"][:])
    np.testing.assert_array_equal(ours["frames"][5:19, 2:4], theirs["frames"][5:19, 2:4])
    np.testing.assert_array_equal(ours["agents/pos"][:], theirs["agents/pos"][:])
    assert dict(ours["frames"].attrs) == {"unit": "m"}


def test_file_urls(tmp_path):
    path = tmp_path / "scene.zarr"
    theirs = written(str(path))
    for url in (f"file://{path}", f"file://localhost{path}"):
        same(rz.open(url), theirs)
        same(rz.open_group(url), theirs)
        np.testing.assert_array_equal(rz.open_array(url + "/frames")[:], theirs["frames"][:])
    with pytest.raises(roverlog.FileError, match="elsewhere"):
        rz.open(f"file://elsewhere{path}")


def test_memory_urls():
    theirs = written("memory://roverlog-test/scene.zarr")
    same(rz.open("memory://roverlog-test/scene.zarr"), theirs)
    np.testing.assert_array_equal(rz.open_array("memory://roverlog-test/scene.zarr/frames")[:], theirs["frames"][:])
    with pytest.raises(roverlog.FileError, match="memory://roverlog-test/none"):
        rz.open("memory://roverlog-test/none")
    with pytest.raises(roverlog.FileError, match="s3://"):
        rz.open("s3://bucket/scene.zarr")
