"""The places `roverlog.zarr.open` accepts besides a directory path, as zarr-python 2 opens
them: `file://` URLs (`file:///data/scene.zarr`, `file://localhost/...`) are that local path,
and `memory://` URLs name fsspec's in-process memory filesystem (what zarr-python 2 writes
to with `zarr.open("memory://x", "w")`), whose files are copied to a temporary directory
(removed at exit) and read from there: roverlog's reader reads files."""
import atexit
import os
import shutil
import tempfile
from urllib.parse import unquote, urlsplit

from ..errors import FileError, quoted

_COPIES = []


def local_path(path):
    """The local directory holding what `path` (a path or a URL) names."""
    if not isinstance(path, str):
        return os.fspath(path)
    scheme, sep, _ = path.partition("://")
    if not sep:
        return path
    if scheme == "file":
        url = urlsplit(path)
        if url.netloc not in ("", "localhost"):
            raise FileError(f"{path}: a file:// URL on host {quoted(url.netloc)} (only this machine's files are read)")
        return unquote(url.path)
    if scheme == "memory":
        return _copy_of_memory(path)
    raise FileError(f"{path}: roverlog.zarr opens directories and file:// or memory:// URLs, not {scheme}://")


def _copy_of_memory(url):
    try:
        import fsspec
    except ImportError:
        raise FileError(f"{url}: memory:// URLs are fsspec's memory filesystem: pip install fsspec") from None
    fs = fsspec.filesystem("memory")
    root = fs._strip_protocol(url).rstrip("/")
    files = fs.find(root) if fs.exists(root) else []
    if not files:
        raise FileError(f"{url}: nothing there in fsspec's memory filesystem (no such array or group)")
    copy = tempfile.mkdtemp(prefix="roverlog-zarr-memory.")
    if not _COPIES:
        atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in _COPIES])
    _COPIES.append(copy)
    for f in files:
        rel = f[len(root):].lstrip("/")
        dst = os.path.join(copy, *rel.split("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as out:
            out.write(fs.cat_file(f))
    return copy
