"""The first submit after start (issue 33): a real `gpudeck api`, one SAE job submitted the
moment /api/health answers 200, then nine more of the same config; the figure is the first
against the tenth, the same run's baseline (every one of them only queues: `hold`).

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/first_submit.py [--starts 5]
        [--config both|defaults|own]

Two configs, a fresh API process for each start of each: the kind's defaults (what the API's
warm-up traces, so nothing is left to trace) and a small config of its own (its first submit
pays one trace, as any new config does, whenever it comes). Also printed: when health first
answered (503 `warming`) and when it said ready, from the process's start, and what a config
new to the process costs after the ten (its one trace, as the own config's first submit).
Goal: the first within 2x of the tenth, at load (the medians over the starts: one submit is
tens of milliseconds, so a single pair is mostly noise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import bench_sampler, bench_server

CONFIGS: dict[str, dict[str, Any]] = {
    "defaults": {},  # what the warm-up traced
    "own": {"d_in": 24, "d_sae": 96, "batch_size": 48, "steps": 10},  # one trace of its own
}
SUBMITS = 10
JOB = {"kind": "sae", "count": 1, "hold": True}  # held: it only queues


def one_start(config: dict[str, Any]) -> tuple[list[float], float, float, float]:
    """(each submit's seconds, then a new config's, health's first answer, health's 200) for a
    fresh API."""
    with (
        bench_server() as server,
        bench_sampler(server),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=600) as http,
    ):
        seconds = [submit_s(http, config) for _ in range(SUBMITS)]
        new = submit_s(http, {**config, "d_sae": config.get("d_sae", 512) + 8})
        return seconds, new, server.answered_s, server.ready_s


def submit_s(http: httpx.Client, config: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = http.post("/api/jobs", json={**JOB, "config": config})
    assert answer.status_code == 201, answer.text
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--config", choices=["both", *CONFIGS], default="both")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    print(f"cores {len(os.sched_getaffinity(0))}; {args.starts} starts a config")
    print(f"{'config':9} {'first s':>8} {'tenth s':>8} {'first/tenth':>12} {'2-10 median':>12}"
          f" {'new config s':>13} {'health answered s':>18} {'ready s':>8}")  # fmt: skip
    for name, config in CONFIGS.items():
        if args.config not in ("both", name):
            continue
        runs = [one_start(config) for _ in range(args.starts)]
        loads.append(os.getloadavg()[0])
        for seconds, new, answered, ready in runs:
            first, tenth, rest = seconds[0], seconds[-1], statistics.median(seconds[1:])
            print(f"{name:9} {first:8.3f} {tenth:8.3f} {first / tenth:11.2f}x {rest:12.3f}"
                  f" {new:13.3f} {answered:18.1f} {ready:8.1f}")  # fmt: skip
        first = statistics.median(r[0][0] for r in runs)
        tenth = statistics.median(r[0][-1] for r in runs)
        new = statistics.median(r[1] for r in runs)
        verdict = "met" if first <= 2 * tenth else "NOT met"
        print(f"{name:9} medians over the starts: first {first:.3f} s, tenth {tenth:.3f} s: "
              f"{first / tenth:.2f}x, goal <= 2x: {verdict}; first / a new config later: "
              f"{first / new:.2f}x")  # fmt: skip
    print(f"load (1 min) during the run: {min(loads):.1f}-{max(loads):.1f}")


if __name__ == "__main__":
    main()
