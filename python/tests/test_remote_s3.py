"""`roverlog.Trace("s3://...")` against a real S3 server: Garage on 127.0.0.1 (built once by
`scripts/garage.sh` into `${ROVERLOG_CACHE:-~/.cache/roverlog}/garage-2.5.0`), the trace
uploaded by `roverlog offload` (ROVERLOG_BIN, set by `cargo test --test python`). Every
channel format reads as the local copy does; opened readers pickle into worker processes
(fork and spawn), each opening its own connection from the URL and its `AWS_*` variables;
a missing bucket and a missing trace are errors naming them."""
import contextlib
import json
import multiprocessing
import os
import pickle
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import roverlog
from roverlog.remote import RemoteTrace


def _garage_bin():
    cache = os.environ.get("ROVERLOG_CACHE") or os.path.expanduser("~/.cache/roverlog")
    path = os.path.join(cache, "garage-2.5.0", "bin", "garage")
    assert os.access(path, os.X_OK), f"{path}: no Garage (scripts/garage.sh builds it; scripts/test runs it)"
    return path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def garage(tmp_path):
    """A Garage server with a bucket `traces`; its `AWS_*` variables."""
    with running_garage(tmp_path / "garage") as env:
        yield env


@contextlib.contextmanager
def running_garage(d):
    """A Garage server keeping its files in `d` (made here), with a bucket `traces`, until
    the block ends; its `AWS_*` variables."""
    binary = _garage_bin()
    d.mkdir()
    rpc, s3, admin = _free_port(), _free_port(), _free_port()
    conf = d / "garage.toml"
    conf.write_text(
        f'metadata_dir = "{d}/meta"\ndata_dir = "{d}/data"\ndb_engine = "sqlite"\n'
        f'replication_factor = 1\nrpc_bind_addr = "127.0.0.1:{rpc}"\nrpc_public_addr = "127.0.0.1:{rpc}"\n'
        f'rpc_secret = "{os.getpid() << 16 | rpc:064x}"\n'
        f'[s3_api]\ns3_region = "garage"\napi_bind_addr = "127.0.0.1:{s3}"\nroot_domain = ".s3.garage.localhost"\n'
        f'[admin]\napi_bind_addr = "127.0.0.1:{admin}"\n'
    )
    log = open(d / "server.log", "wb")
    server = subprocess.Popen([binary, "-c", str(conf), "server"], stdout=subprocess.DEVNULL, stderr=log,
                              env={**os.environ, "RUST_LOG": "warn"})

    def cli(*args):
        out = subprocess.run([binary, "-c", str(conf), *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"garage {args}: {out.stderr}"
        return out.stdout

    try:
        t0 = time.monotonic()
        while subprocess.run([binary, "-c", str(conf), "status"], capture_output=True, timeout=30).returncode:
            assert time.monotonic() - t0 < 30, "garage did not answer `status` within 30 s: " + (d / "server.log").read_text()
            time.sleep(0.1)
        node = cli("node", "id", "-q").strip().split("@")[0]
        cli("layout", "assign", "-z", "dc1", "-c", "1G", node)
        cli("layout", "apply", "--version", "1")
        key = cli("key", "create", "python-test")
        field = {l.split(":", 1)[0].strip(): l.split(":", 1)[1].strip() for l in key.splitlines() if ":" in l}
        cli("bucket", "create", "traces")
        cli("bucket", "allow", "--read", "--write", "--owner", "traces", "--key", field["Key ID"])
        yield {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s3}",
            "AWS_ACCESS_KEY_ID": field["Key ID"],
            "AWS_SECRET_ACCESS_KEY": field["Secret key"],
            "AWS_REGION": "garage",
        }
    finally:
        server.kill()
        server.wait(timeout=30)
        log.close()


@pytest.fixture
def s3_trace(trace, garage, monkeypatch, tmp_path):
    """The conftest trace uploaded to `s3://traces/trace`; (url, local path)."""
    root, _ = trace
    binary = os.environ.get("ROVERLOG_BIN")
    assert binary, "ROVERLOG_BIN is not set: run these tests through `cargo test --test python`"
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    for k, v in garage.items():
        monkeypatch.setenv(k, v)
    out = subprocess.run([binary, "offload", root, "s3://traces", "--journal", str(tmp_path / "journal.json")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return "s3://traces/trace", root


def _equal(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _equal(x, y)
    else:
        np.testing.assert_array_equal(a, b)


def test_every_channel_reads_as_the_local_copy(s3_trace):
    url, root = s3_trace
    remote, local = roverlog.Trace(url), roverlog.Trace(root)
    assert isinstance(remote, RemoteTrace)
    assert list(remote.sensors) == list(local.sensors)
    for name, ls in local.sensors.items():
        rs = remote[name]
        assert len(rs) == len(ls)
        np.testing.assert_array_equal(rs.timestamps, ls.timestamps)
        for ch, lc in ls.channels.items():
            rc = rs.channels[ch]
            assert len(rc) == len(lc), f"{name}/{ch}"
            _equal(rc.read(), lc.read())
            _equal(rc[len(lc) // 2], lc[len(lc) // 2])
            _equal(rc[2:7], lc[2:7])
            with pytest.raises(roverlog.SampleIndexError):
                rc[len(lc)]
    sync = roverlog.Nearest("video", tol=0.1)
    rt, lt = roverlog.Trace(url, sync=sync), roverlog.Trace(root, sync=sync)
    assert len(rt) == len(lt) > 0
    _equal(rt[3]["video"]["video.avi"], lt[3]["video"]["video.avi"])


def _read(args):
    obj, i = args
    return np.asarray(obj[i]).tobytes()


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_opened_readers_pickle_into_worker_processes(s3_trace, start):
    url, root = s3_trace
    remote, local = roverlog.Trace(url), roverlog.Trace(root)
    video = remote["video"].channels["video.avi"]
    rng = remote["lidar"].channels["rng"]
    video[0]  # opened here first: each worker opens its own
    back = pickle.loads(pickle.dumps(remote))
    np.testing.assert_array_equal(back["lidar"].channels["rng"][4], local["lidar"].channels["rng"][4])
    jobs = [(video, i) for i in (5, 1, 9)] + [(rng, i) for i in (3, 0)]
    with multiprocessing.get_context(start).Pool(2) as pool:
        got = pool.map(_read, jobs)
    want = [np.asarray(local["video"].channels["video.avi"][i]).tobytes() for i in (5, 1, 9)]
    want += [np.asarray(local["lidar"].channels["rng"][i]).tobytes() for i in (3, 0)]
    assert got == want


def test_a_missing_bucket_and_a_missing_trace_are_errors_naming_them(s3_trace):
    with pytest.raises(roverlog.FileError, match='bucket "nosuchbucket" does not exist at http://127.0.0.1'):
        roverlog.Trace("s3://nosuchbucket/trace")
    with pytest.raises(roverlog.FileError, match="s3://traces/nosuchtrace at http://127.0.0.1.*no trace there"):
        roverlog.Trace("s3://traces/nosuchtrace")
    with pytest.raises(roverlog.MissingKeyError, match='no sensor .radar.'):
        roverlog.Trace(s3_trace[0])["radar"]


def test_the_dask_fleet_summary_over_s3_equals_the_local_one(garage, monkeypatch, tmp_path):
    from test_fleet import SCRIPT, make_fleet

    root = str(tmp_path / "fleet")
    make_fleet(root)
    # The events as the daemon writes them (`offload` sends a trace whose event log reads
    # whole and ends in a `stop`); the summary counts the same `drop` and `gap` events.
    full = {
        "drop": {"first_frame": 0, "from_ts": 0.0, "to_ts": 0.0},
        "gap": {"frame": 0, "after_seq": 0, "seq": 0, "ts": 0.0},
    }
    for d, _, files in os.walk(root):
        if "events.jsonl" in files:
            path = os.path.join(d, "events.jsonl")
            with open(path) as f:
                events = [json.loads(line) for line in f]
            events = [{"t": 1.5, **full[e["event"]], **e} for e in events]
            events.insert(0, {"t": 1.0, "event": "start", "trace": "t", "reason": "command", "label": None, "sensors": []})
            events.append({"t": 2.0, "event": "stop", "trace": "t", "reason": "command", "sensors": {}})
            with open(path, "w") as f:
                f.writelines(json.dumps(e) + "\n" for e in events)
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    for k, v in garage.items():
        monkeypatch.setenv(k, v)
    out = subprocess.run([os.environ["ROVERLOG_BIN"], "offload", root, "s3://traces/fleet", "--journal",
                          str(tmp_path / "journal.json")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    run = lambda where, *a: json.loads(subprocess.run(
        [sys.executable, SCRIPT, where, "--json", *a], check=True, capture_output=True, text=True, timeout=300
    ).stdout)
    local = run(root, "--local")
    assert len(local) == 2 * 20
    assert run("s3://traces/fleet", "--local") == local
    assert run("s3://traces/fleet/", "--workers", "2") == local
