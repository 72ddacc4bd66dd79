"""Which decoder turns JPEG frames (`jpg` and `mjpg` channels, gulp frames) into pixels.

libjpeg-turbo (`libturbojpeg.so.0`, Debian's `libturbojpeg0`) where it loads, found at run
time (nothing to build against), else zune-jpeg (pure Rust, built in). Both give the same
array shapes and errors; pixel values may differ by a level or two. The environment variable
`ROVERLOG_JPEG=auto|zune|turbo` (read at import) or `set_jpeg_decoder` chooses; asking for
`turbo` where libjpeg-turbo does not load is an `OSError` saying why.
"""
from . import _roverlog

ENV = "ROVERLOG_JPEG"


def set_jpeg_decoder(name):
    """Decode JPEG frames with `"auto"` (the default), `"zune"` or `"turbo"`."""
    if not isinstance(name, str):
        raise TypeError(f"set_jpeg_decoder takes a str, not {type(name).__name__}")
    _roverlog.set_jpeg_decoder(name)


def jpeg_decoder():
    """The decoder JPEG frames decode with now: `"turbo"` or `"zune"`."""
    return _roverlog.jpeg_decoder()[1]


def configure_at_import():
    """Refuses a bad `ROVERLOG_JPEG` (or `turbo` without the library) at import, not at the
    first frame."""
    _roverlog.jpeg_decoder()
