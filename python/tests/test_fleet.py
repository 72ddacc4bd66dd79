"""examples/fleet_summary.py on ~20 traces with 2 local Dask workers equals the
single-process result (and the numbers it reports are the traces' own)."""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "fleet_summary.py")


def make_fleet(root, count=20):
    rng = np.random.default_rng(1)
    truth = {}
    for k in range(count):
        t = os.path.join(root, f"vehicle{k % 3}", f"2026.11.{k + 1:02d}-08.00.00")
        os.makedirs(os.path.join(t, "_roverlog"))
        open(os.path.join(t, "config.yaml"), "w").close()
        events = []
        for s, hz in [("imu", 100.0), ("gps", 10.0)]:
            n = int(rng.integers(5, 200))
            d = os.path.join(t, s)
            os.makedirs(d)
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump({"ts": {"format": "raw", "type": "f8", "shape": [], "desc": ""},
                           "x": {"format": "raw", "type": "f4", "shape": [2], "desc": ""}}, f)
            (1.7e9 + k * 1000 + np.arange(n) / hz).astype("<f8").tofile(os.path.join(d, "ts"))
            np.zeros((n, 2), "<f4").tofile(os.path.join(d, "x"))
            drops = int(rng.integers(0, 4))
            for _ in range(drops):
                events.append({"event": "drop", "sensor": s, "count": 3})
            events.append({"event": "gap", "sensor": s, "missing": k})
            truth[(os.path.relpath(t, root), s)] = (n, 3 * drops, k)
        with open(os.path.join(t, "_roverlog", "events.jsonl"), "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in events)
    return truth


def test_two_dask_workers_give_the_single_process_answer(tmp_path):
    root = str(tmp_path / "fleet")
    truth = make_fleet(root)
    run = lambda *a: subprocess.run([sys.executable, SCRIPT, root, "--json", *a], check=True,
                                    capture_output=True, text=True, timeout=300).stdout
    local = json.loads(run("--local"))
    dask = json.loads(run("--workers", "2"))
    assert dask == local
    assert len(local) == 2 * 20
    for r in local:
        n, dropped, missing = truth[(r["trace"], r["sensor"])]
        assert (r["samples"], r["dropped"], r["missing"], r["gaps"]) == (n, dropped, missing, 1)
