"""Early stopping on a seeded toy sweep (issue 27): device-seconds saved, and whether the best
member still finishes.

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/sweep_early_stop.py

A real API, worker and scheduler, 2 simulated devices. The same 16-member SAE sweep (learning
rate x k on synthetic data; most learning rates are poor) runs twice, max_parallel 2: without
early stopping (the baseline), then with the median rule on mse_loss. Measured: the members'
device-seconds (started_at to finished_at, summed), and the best member's final mse_loss in
each run. Goal: >= 40 % saved, and the full sweep's best member finishes in the stopped one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import BenchServer, bench_server, bench_worker
from scheduler import _scheduler

CONFIG = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 150,
    "metrics_interval": 10,
    "checkpoint_interval": 150,
    "seed": 1,
    "dataset": {"type": "synthetic", "num_features": 32, "active_features": 3},
}
PARAMETERS = {
    "grid": {
        "lr": [4e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6],  # the good ones first
        "k": [3, 6],
    }
}
EARLY_STOP = {"rule": "median", "metric": "mse_loss", "grace_steps": 30, "min_peers": 2}
ENDED = {"succeeded", "failed", "cancelled", "lost", "timeout", "stopped_early"}


@contextlib.contextmanager
def _sampler(server: BenchServer) -> Iterator[None]:
    """The node's sampler: without its reports the node is offline and nothing is placed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudeck", "sampler"], env=server.env, start_new_session=True
    )
    try:
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def run(http: httpx.Client, early_stop: dict[str, object] | None) -> dict[str, object]:
    body: dict[str, object] = {
        "job": {"kind": "sae", "config": CONFIG, "count": 1},
        "parameters": PARAMETERS,
        "max_parallel": 2,
    }
    if early_stop:
        body["early_stop"] = early_stop
    sweep = http.post("/api/sweeps", json=body)
    sweep.raise_for_status()
    sweep_id = sweep.json()["id"]
    started = time.monotonic()
    while True:
        members = http.get(f"/api/sweeps/{sweep_id}").json()["members"]
        if all(m["status"] in ENDED for m in members):
            break
        time.sleep(1.0)
    wall = time.monotonic() - started

    def seconds(m: dict[str, object]) -> float:
        if not m["started_at"] or not m["finished_at"]:
            return 0.0
        begin = datetime.fromisoformat(str(m["started_at"]))
        return (datetime.fromisoformat(str(m["finished_at"])) - begin).total_seconds()

    finished = [m for m in members if m["status"] == "succeeded"]
    best = min(finished, key=lambda m: m["metrics"].get("mse_loss", float("inf")))  # type: ignore[union-attr]
    return {
        "device_s": sum(seconds(m) for m in members),
        "wall_s": wall,
        "statuses": sorted(m["status"] for m in members),
        "best": (best["params"], best["metrics"].get("mse_loss")),  # type: ignore[union-attr]
    }


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="gpudeck-bench-early-"))
    load = os.getloadavg()[0]
    with (
        bench_server(devices="2x80GiB") as server,
        bench_worker(server, root / "worker.log", {"GPUDECK_DATA_DIR": str(root / "data")}),
        _scheduler(server),
        _sampler(server),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http,
    ):
        full = run(http, None)
        stopped = run(http, EARLY_STOP)
    saved = 1 - stopped["device_s"] / full["device_s"]  # type: ignore[operator]
    print(f"cores {len(os.sched_getaffinity(0))}, load {load:.2f}; 16 members, max_parallel 2")
    for name, result in (("without early stopping", full), ("median rule", stopped)):
        counts = {s: result["statuses"].count(s) for s in set(result["statuses"])}  # type: ignore[union-attr]
        print(
            f"{name:24s} device-seconds {result['device_s']:.0f}, wall {result['wall_s']:.0f} s, "
            f"{counts}, best member {result['best']}"
        )
    same_best = full["best"][0] == stopped["best"][0]  # type: ignore[index]
    print(
        f"device-seconds saved: {saved:.0%} (goal >= 40 %); the best member finishes: {same_best}"
    )


if __name__ == "__main__":
    main()
