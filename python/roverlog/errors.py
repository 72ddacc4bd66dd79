"""What roverlog raises when a file cannot be read as asked.

Every error about a user's data is a `roverlog.Error`, names the file (and the channel and
sample, the gulp id and frame, where one applies), and is also the builtin exception a
caller would catch without knowing roverlog:

- `FileError` (`FileNotFoundError`): a path that does not exist, or is not what was asked
  (a file where a trace directory was expected);
- `ReadError` (`OSError`): any other operating-system error reading a file (permissions, I/O);
- `MissingKeyError` (`KeyError`): no channel, sensor, gulp id or zarr member of that name;
- `SampleIndexError` (`IndexError`): a sample, frame or row past the end;
- `FormatError` (`ValueError`): bytes or metadata that are corrupt, inconsistent or
  unsupported (bad JSON, an unknown type code, a truncated JPEG, a failed chunk);
- `DamagedSampleError` (a `FormatError`, so a `ValueError`): a sample the sensor's `ts` (or
  the channel's own index or listing) counts but whose bytes are missing, cut short or do not
  decode: an `lzmaf` frame past its cut data file, a `raw` record past a truncated file, a
  missing or empty `jpg`/`npz` file, a frame past a cut video. It names the channel (`path`)
  and the sample (`index`) and points to `roverlog recover`; the channel's intact samples
  still read. It is not an `IndexError`: a loop that stops at `IndexError` must not take a
  hole in the middle of a channel for its end.

`roverlog.Error` itself is an `Exception`: one class cannot be both a `ValueError` and an
`OSError`, so each kind carries its builtin and the base carries none. Argument errors of the
caller (a float index, a negative slice step) stay plain `TypeError`/`ValueError`.

This module imports nothing of the package: the native library raises these classes too.
"""


class Error(Exception):
    """Base of every error roverlog raises about a file it reads."""


class FileError(Error, FileNotFoundError):
    """A path that does not exist, or is a file where a directory was expected (or the
    reverse)."""


class ReadError(Error, OSError):
    """An operating-system error reading a file (other than a missing file)."""


class MissingKeyError(Error, KeyError):
    """No channel, sensor, id or member of that name."""

    def __str__(self):
        # KeyError shows its argument's repr (quotes around the whole message).
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class SampleIndexError(Error, IndexError):
    """A sample, frame or row index past the end."""


class FormatError(Error, ValueError):
    """Data or metadata that is corrupt, inconsistent or unsupported."""


class DamagedSampleError(FormatError):
    """A sample the sensor counts that its channel cannot give (missing, cut short, not
    decoding). `path` is the channel's file or directory, `index` the sample."""

    def __init__(self, msg, path=None, index=None):
        super().__init__(msg, path, index)
        self.path = path
        self.index = index

    def __str__(self):
        return str(self.args[0])


def quoted(name):
    """`name` (a channel, sensor, id, key or code) quoted in a message as the Rust side quotes
    it (`{:?}`): in double quotes, with `"`, `\\` and control characters escaped, so the
    package's errors and the native library's read alike."""
    out = []
    for ch in str(name):
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif not ch.isprintable():
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def quoted_list(names):
    """Names quoted as `quoted` does, in brackets (as Rust prints a list of strings)."""
    return "[" + ", ".join(quoted(n) for n in names) + "]"


def from_os_error(e, path):
    """`e` (an `OSError` opening or reading `path`) as the roverlog error of its kind, with
    the operating system's reason."""
    why = e.strerror or str(e)
    cls = FileError if isinstance(e, (FileNotFoundError, NotADirectoryError, IsADirectoryError)) else ReadError
    return cls(f"{path}: {why}")
