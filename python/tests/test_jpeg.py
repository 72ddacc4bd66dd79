"""Choosing the JPEG decoder (`roverlog.jpeg`): libjpeg-turbo where it loads, which it must
here (scripts/test installs libturbojpeg0), zune-jpeg on request; `ROVERLOG_JPEG` read at
import. The decoding tests themselves run on both (conftest's `each_jpeg_decoder`)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import roverlog


def test_auto_takes_libjpeg_turbo_where_it_loads():
    assert roverlog.jpeg_decoder() == "turbo", "libturbojpeg.so.0 does not load: apt-get install libturbojpeg0"


def _in_child(env_value, code="import roverlog; print(roverlog.jpeg_decoder())"):
    env = dict(os.environ, ROVERLOG_JPEG=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_the_environment_variable_chooses_at_import():
    for value, used in [("zune", "zune"), ("turbo", "turbo"), ("auto", "turbo"), ("", "turbo")]:
        out = _in_child(value)
        assert out.returncode == 0 and out.stdout.strip() == used, (value, out.stdout, out.stderr)
    out = _in_child("fastest")
    assert out.returncode != 0
    assert "ValueError" in out.stderr and "ROVERLOG_JPEG=\"fastest\"" in out.stderr, out.stderr


def test_set_jpeg_decoder_refuses_unknown_names_and_switches_decoders(tmp_path):
    with pytest.raises(ValueError, match="auto, zune .* or turbo"):
        roverlog.set_jpeg_decoder("fast")
    with pytest.raises(TypeError):
        roverlog.set_jpeg_decoder(None)
    assert roverlog.jpeg_decoder() == "turbo"  # unchanged by the refusals
    import cv2
    from conftest import images
    ok, b = cv2.imencode(".jpg", images(1, 480, 640)[0])
    assert ok
    path = tmp_path / "f.jpg"
    path.write_bytes(b.tobytes())
    # The same frame through each decoder (a one-frame gulp chunk): within a level or two.
    from roverlog.gulp import GulpChunk
    import json
    data = b.tobytes() + b"\0" * (-len(b.tobytes()) % 4)
    (tmp_path / "data_0.gulp").write_bytes(data)
    (tmp_path / "meta_0.gmeta").write_text(json.dumps({"v": {"frame_info": [[0, len(data) - len(b.tobytes()), len(data)]],
                                                             "meta_data": [{}]}}))
    got = {}
    try:
        for name in ["zune", "turbo"]:
            roverlog.set_jpeg_decoder(name)
            assert roverlog.jpeg_decoder() == name
            frames, _ = GulpChunk(str(tmp_path / "data_0.gulp"), str(tmp_path / "meta_0.gmeta")).read_frames("v")
            got[name] = frames[0].astype(np.int16)
    finally:
        roverlog.set_jpeg_decoder("auto")
    libjpeg = cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)[..., ::-1].astype(np.int16)
    assert got["turbo"].shape == got["zune"].shape == libjpeg.shape
    assert np.abs(got["turbo"] - libjpeg).mean() < 0.5, "libjpeg-turbo as OpenCV's libjpeg decodes"
    assert np.abs(got["zune"] - got["turbo"]).mean() < 1.0


def test_without_libjpeg_turbo_auto_is_zune_and_turbo_an_error_naming_the_library(tmp_path):
    """A machine without libturbojpeg0, made by hiding the library this process loaded behind
    an empty file in a child's own mount namespace (the tests run as root, as scripts/test
    says)."""
    assert roverlog.jpeg_decoder() == "turbo"
    (lib,) = {line.split()[-1] for line in open("/proc/self/maps") if "libturbojpeg" in line}
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    gulp = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "tests", "data", "gulp_small")
    code = ("import roverlog, roverlog.gulp; g = roverlog.gulp.GulpDirectory(%r); "
            "f = g[next(iter(g.merged_meta_dict))][0]; print(roverlog.jpeg_decoder(), len(f), f[0].shape)" % gulp)

    def hidden(env_value):
        env = dict(os.environ, ROVERLOG_JPEG=env_value)
        script = 'mount --bind "$0" "$1" && exec "$2" -c "$3"'
        return subprocess.run(["unshare", "-m", "sh", "-c", script, str(empty), lib, sys.executable, code],
                              env=env, capture_output=True, text=True, timeout=120)

    out = hidden("auto")
    assert out.returncode == 0 and out.stdout.startswith("zune "), (out.stdout, out.stderr)
    out = hidden("turbo")
    assert out.returncode != 0, out.stdout
    assert "OSError: libjpeg-turbo was asked for but libturbojpeg.so.0 does not load" in out.stderr, out.stderr
    assert "apt-get install libturbojpeg0" in out.stderr, out.stderr
