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
  unsupported (bad JSON, an unknown type code, a truncated JPEG, a failed chunk).

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


def from_os_error(e, path):
    """`e` (an `OSError` opening or reading `path`) as the roverlog error of its kind, with
    the operating system's reason."""
    why = e.strerror or str(e)
    cls = FileError if isinstance(e, (FileNotFoundError, NotADirectoryError, IsADirectoryError)) else ReadError
    return cls(f"{path}: {why}")
