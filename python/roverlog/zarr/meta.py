"""What `roverlog.zarr`'s arrays and groups say about themselves, as zarr-python 2 says it: the
directory store, read-only attributes, codecs (numcodecs' objects, or `Codec` without
numcodecs), fill values as zarr-python gives them and the `info` report."""
import builtins
import json
import os
import textwrap
from collections.abc import Mapping

import numpy as np

from .. import _roverlog
from ..errors import MissingKeyError, from_os_error


class ReadOnlyError(PermissionError):
    """Writing to a read-only zarr object (zarr-python 2's `ReadOnlyError` is a `PermissionError`
    too)."""


class DirectoryStore(Mapping):
    """zarr-python 2's `DirectoryStore`, read-only: keys are `/`-separated paths below `path`
    (an absolute path, as zarr-python's), values the files' bytes."""

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))

    def __repr__(self):
        return f"<roverlog.zarr.DirectoryStore {self.path!r}>"

    def __eq__(self, other):
        return isinstance(other, DirectoryStore) and self.path == other.path

    def __hash__(self):
        return hash(self.path)

    def __reduce__(self):
        return (DirectoryStore, (self.path,))

    def _fs(self, key):
        key = str(key).strip("/")
        return os.path.join(self.path, *key.split("/")) if key else self.path

    def __getitem__(self, key):
        p = self._fs(key)
        try:
            with builtins.open(p, "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise MissingKeyError(f"{p}: no such key in the store") from None
        except OSError as e:
            raise from_os_error(e, p) from None

    def __contains__(self, key):
        return os.path.isfile(self._fs(key))

    def __iter__(self):
        for d, _, files in os.walk(self.path):
            rel = os.path.relpath(d, self.path)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for f in files:
                yield prefix + f

    def __len__(self):
        return sum(1 for _ in self)

    def __setitem__(self, key, value):
        raise ReadOnlyError(f"{self.path}: roverlog.zarr is read-only")

    __delitem__ = __setitem__

    def listdir(self, path=None):
        """The sorted names in directory `path` (zarr-python's `listdir`)."""
        p = self._fs(path or "")
        return sorted(os.listdir(p)) if os.path.isdir(p) else []

    def getsize(self, path=None):
        """zarr-python's: a file's size, or the sum of the files directly in a directory."""
        p = self._fs(path or "")
        if os.path.isfile(p):
            return os.path.getsize(p)
        if os.path.isdir(p):
            return sum(e.stat().st_size for e in os.scandir(p) if e.is_file())
        return 0


class Attributes(Mapping):
    """zarr-python 2's `Attributes` of a read-only object: a mapping read from `.zattrs`."""

    def __init__(self, store, key):
        self.store, self.key = store, key
        self.read_only = True
        self.cache = True
        self._doc = None

    def _load(self):
        if self._doc is None:
            # Read by the native library, within its limit; `{}` when there is none.
            path = self.store._fs(self.key)
            if os.path.basename(path) != ".zattrs":
                raise ValueError(f"{path}: attributes are read from a .zattrs file")
            self._doc = json.loads(_roverlog.zarr_attrs(os.path.dirname(path)))
        return self._doc

    def refresh(self):
        self._doc = None

    def asdict(self):
        return dict(self._load())

    def __getitem__(self, name):
        return self._load()[name]

    def __iter__(self):
        return iter(self._load())

    def __len__(self):
        return len(self._load())

    def __repr__(self):
        return repr(self._load())

    def _refuse(self, *args, **kwargs):
        raise ReadOnlyError(f"{self.store._fs(self.key)}: roverlog.zarr is read-only")

    __setitem__ = __delitem__ = put = update = clear = pop = popitem = setdefault = _refuse


_SHUFFLE = {-1: "AUTOSHUFFLE", 0: "NOSHUFFLE", 1: "SHUFFLE", 2: "BITSHUFFLE"}
_NAMES = {"blosc": "Blosc", "zstd": "Zstd", "zlib": "Zlib", "gzip": "GZip", "lz4": "LZ4", "bz2": "BZ2",
          "lzma": "LZMA", "delta": "Delta"}


class Codec:
    """A codec's configuration where numcodecs is not installed: `codec_id`, `get_config()`
    and `repr` as numcodecs' codec of that configuration (`Blosc(cname='lz4', clevel=5,
    shuffle=SHUFFLE, blocksize=0)`), and the configuration's values as attributes. It equals
    any codec with the same `get_config()`. It does not encode or decode: roverlog's reader
    does that."""

    def __init__(self, config):
        self._config = dict(config)
        self.codec_id = self._config["id"]
        for k, v in self._config.items():
            if k != "id":
                setattr(self, k, v)

    def get_config(self):
        return dict(self._config)

    def __eq__(self, other):
        try:
            return self.get_config() == other.get_config()
        except AttributeError:
            return False

    def __hash__(self):
        return hash(json.dumps(self._config, sort_keys=True, default=str))

    def __repr__(self):
        name = _NAMES.get(self.codec_id, self.codec_id)
        c = {k: v for k, v in self._config.items() if k != "id"}
        if self.codec_id == "blosc":
            shuffle = _SHUFFLE.get(c.get("shuffle"), c.get("shuffle"))
            return (f"Blosc(cname={c.get('cname')!r}, clevel={c.get('clevel')!r}, shuffle={shuffle}, "
                    f"blocksize={c.get('blocksize')!r})")
        if self.codec_id == "zstd":
            return f"Zstd(level={c.get('level')!r})"
        if self.codec_id == "lzma":
            return "LZMA(" + ", ".join(f"{k}={c.get(k)!r}" for k in ["format", "check", "preset", "filters"]) + ")"
        if self.codec_id == "delta":
            return f"Delta(dtype={c.get('dtype')!r}" + (
                f", astype={c['astype']!r})" if c.get("astype", c.get("dtype")) != c.get("dtype") else ")")
        # numcodecs' default: the parameters in name order.
        return f"{name}(" + ", ".join(f"{k}={c[k]!r}" for k in sorted(c)) + ")"


def codec(config):
    """The codec `config` (a `.zarray` compressor or filter) describes: numcodecs' own when
    numcodecs is importable and knows it, else a `Codec`. `None` stays `None`."""
    if config is None:
        return None
    try:
        import numcodecs
    except ImportError:
        return Codec(config)
    try:
        return numcodecs.get_codec(dict(config))
    except (ValueError, KeyError, TypeError):
        return Codec(config)


def fill_value(raw, dtype):
    """The fill value as zarr-python 2 gives it, from what the native library decoded of
    `.zarray`'s `fill_value` (`raw`: one element's bytes in the stored byte order, `None` for
    none): a numpy scalar, `np.void` for a structured dtype, a `str` for `U`, a Python float
    for NaN and the infinities."""
    if raw is None:
        return None
    v = np.frombuffer(raw, dtype=dtype, count=1)[0]
    if dtype.kind == "U":
        return str(v)
    if dtype.kind == "f" and not np.isfinite(v):
        return float(v)
    return v


class InfoReporter:
    """`a.info`: zarr-python's text report as the `repr`, an HTML table for notebooks."""

    def __init__(self, obj):
        self.obj = obj
        self.items = obj.info_items()

    def __repr__(self):
        width = max(len(k) for k, _ in self.items)
        out = ""
        for k, v in self.items:
            wrap = textwrap.TextWrapper(width=80, initial_indent=k.ljust(width) + " : ",
                                        subsequent_indent=" " * width + " : ")
            out += wrap.fill(str(v)) + "\n"
        return out

    def _repr_html_(self):
        rows = "".join(f'<tr><th style="text-align: left">{k}</th><td style="text-align: left">{v}</td></tr>'
                       for k, v in self.items)
        return f'<table class="zarr-info"><tbody>{rows}</tbody></table>'


def human_size(n):
    """zarr-python's byte counts: `2413032 (2.3M)` past 1 KiB."""
    if n <= 2**10:
        return str(n)
    for unit, power in [("K", 10), ("M", 20), ("G", 30), ("T", 40)]:
        if n < 2 ** (power + 10):
            return f"{n} ({n / float(2**power):.1f}{unit})"
    return f"{n} ({n / float(2**50):.1f}P)"


def typestr(o):
    return f"{type(o).__module__}.{type(o).__name__}"
