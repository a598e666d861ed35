"""Sweeps (issue 27): one request for 1,000 members, against 1,000 single submits, same run.

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/sweeps.py [--members 1000]

A real `gpudeck api` and Postgres, 8 simulated devices, no scheduler (the members only queue).
Measured: the wall time of POST /api/sweeps with a grid of `--members` SAE members (k x seed),
answered with every member created; baseline, same run: the same members as single POST
/api/jobs one after another (each with `hold`, so that none starts: both only queue). Goal:
1,000 members in <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import bench_server

CONFIG = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=1000)
    args = parser.parse_args()
    ks = [1, 2, 4, 8, 16]
    seeds = list(range(args.members // len(ks)))
    load = os.getloadavg()[0]
    with (
        bench_server() as server,
        httpx.Client(base_url=server.url, headers=server.headers, timeout=600) as http,
    ):
        job = {"kind": "sae", "config": CONFIG, "count": 1}
        http.post("/api/jobs", json={**job, "hold": True}).raise_for_status()  # warm
        body = {
            "job": job,
            "parameters": {"grid": {"k": ks, "seed": seeds}},
            "max_parallel": 8,
        }
        started = time.perf_counter()
        created = http.post("/api/sweeps", json=body)
        sweep_s = time.perf_counter() - started
        created.raise_for_status()
        members = len(created.json()["members"])
        started = time.perf_counter()
        for k in ks:
            for seed in seeds:
                config = {**CONFIG, "k": k, "seed": seed}
                http.post("/api/jobs", json={**job, "config": config, "hold": True})
        singles_s = time.perf_counter() - started
    print(f"cores {len(os.sched_getaffinity(0))}, load {load:.2f}")
    print(f"POST /api/sweeps, {members} members: {sweep_s:.2f} s ({members / sweep_s:.0f}/s)")
    print(f"{members} single POST /api/jobs: {singles_s:.2f} s ({members / singles_s:.0f}/s)")
    verdict = "met" if sweep_s <= 1.0 else "NOT met"
    print(f"sweep / singles: {sweep_s / singles_s:.2f}x; goal <= 1 s: {verdict}")


if __name__ == "__main__":
    main()
