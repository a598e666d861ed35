"""Sweeps (issues 27 and 33): one request for 1,000 members, varying a field that changes no
memory (lr, seed, a nested ddp.bucket_cap_mb) or one that does (k), each accepted in <= 1 s.

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/sweeps.py [--members 1000]
        [--runs 3] [--singles]

A real `gpudeck api` and Postgres, 8 simulated devices, no scheduler (the members only queue).
Measured: the wall time of POST /api/sweeps with `--members` SAE members, answered with every
member created; the median of `--runs`. Each run of each row sweeps a d_sae the server has
not seen, so it pays for the traces a new sweep needs: one for a sweep that varies nothing
memory depends on, one per distinct k for the k row (k x seed, `K_VALUES`); then the same
sweep again, which needs none. The seed row is the same run's baseline (the other rows differ
from it by what they vary); with `--singles`, also the same members as single POST /api/jobs
one after another (each with `hold`).

    ... ../bench/sweeps.py --cancel [--members 1000]

Cancel (issue 33): 3 sweeps of `--members` waiting members each, cancelled through POST
/api/sweeps/{id}/cancel one after another, timed until every member has ended (each answer
lists them); baseline, same run: 3 more such sweeps cancelled by the loop the route ran before,
jobs_cancel.cancel_job per member in one transaction (in process: the route's time was that
loop's and the answer's). Goal: all 3,000 ended in <= 5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import bench_sampler, bench_server

from gpudeck.core.db import make_engine, make_sessionmaker, transaction
from gpudeck.models import JobStatus
from gpudeck.services.jobs import cancel as jobs_cancel
from gpudeck.services.jobs import state as job_state
from gpudeck.services.sweeps import control

CONFIG = {"d_in": 16, "batch_size": 64, "steps": 10}
K_VALUES = [2, 4, 8, 16]  # k sizes the top-k's tensors: one trace each
Grid = Callable[[int], dict[str, list[Any]]]
ROWS: dict[str, tuple[Grid, int]] = {  # name: (grid for n members, distinct traces)
    "seed (baseline)": (lambda n: {"seed": list(range(n))}, 1),
    "lr": (lambda n: {"lr": [1e-4 * (1 + i / n) for i in range(n)]}, 1),
    "ddp.bucket_cap_mb": (lambda n: {"ddp.bucket_cap_mb": [1.0 + i for i in range(n)]}, 1),
    f"k x seed, k in {K_VALUES}": (
        lambda n: {"k": K_VALUES, "seed": list(range(n // len(K_VALUES)))},
        len(K_VALUES),
    ),
}


def sweep_s(http: httpx.Client, grid: dict[str, list[Any]], d_sae: int) -> tuple[float, int]:
    body = {
        "job": {"kind": "sae", "config": {**CONFIG, "d_sae": d_sae}, "count": 1},
        "parameters": {"grid": grid},
        "max_parallel": 8,
    }
    started = time.perf_counter()
    created = http.post("/api/sweeps", json=body)
    seconds = time.perf_counter() - started
    assert created.status_code == 201, created.text
    return seconds, len(created.json()["members"])


def singles_s(http: httpx.Client, grid: dict[str, list[Any]]) -> float:
    started = time.perf_counter()
    for seed in grid["seed"]:
        config = {**CONFIG, "d_sae": 64, "seed": seed}
        http.post("/api/jobs", json={"kind": "sae", "config": config, "count": 1, "hold": True})
    return time.perf_counter() - started


def _waiting_sweep(http: httpx.Client, members: int) -> int:
    body = {
        "job": {"kind": "sae", "config": {**CONFIG, "d_sae": 64}, "count": 1},
        "parameters": {"grid": {"seed": list(range(members))}},
        "max_parallel": 8,
    }
    created = http.post("/api/sweeps", json=body)
    created.raise_for_status()
    return int(created.json()["id"])


def _cancel_one_by_one(database_url: str, sweep_id: int) -> None:
    """The cancel before issue 33: each member's own lock, transition and wake-up."""
    engine = make_engine(database_url, pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            for job in control.member_jobs(session, sweep_id):
                if JobStatus(job.status) not in job_state.TERMINAL:
                    jobs_cancel.cancel_job(session, job.id)
    finally:
        engine.dispose()


def cancel_bench(members: int, sweep_count: int = 3) -> None:
    load = os.getloadavg()[0]
    with (
        bench_server() as server,
        httpx.Client(base_url=server.url, headers=server.headers, timeout=600) as http,
    ):
        bulk = [_waiting_sweep(http, members) for _ in range(sweep_count)]
        loop = [_waiting_sweep(http, members) for _ in range(sweep_count)]
        started = time.perf_counter()
        ended = 0
        for sweep_id in bulk:
            answer = http.post(f"/api/sweeps/{sweep_id}/cancel")
            answer.raise_for_status()
            ended += answer.json()["counts"].get("cancelled", 0)
        bulk_s = time.perf_counter() - started
        started = time.perf_counter()
        for sweep_id in loop:
            _cancel_one_by_one(server.database_url, sweep_id)
        loop_s = time.perf_counter() - started
        looped = sum(
            http.get(f"/api/sweeps/{i}").json()["counts"].get("cancelled", 0) for i in loop
        )
    total = members * sweep_count
    print(f"cores {len(os.sched_getaffinity(0))}, load {load:.2f}")
    print(f"cancel, {sweep_count} sweeps x {members}: {ended} of {total} ended in {bulk_s:.2f} s")
    print(f"the per-member loop, {looped} of {total}: {loop_s:.2f} s")
    verdict = "met" if bulk_s <= 5.0 and ended == total else "NOT met"
    print(f"bulk / loop: {bulk_s / loop_s:.3f}x; goal all ended in <= 5 s: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--singles", action="store_true")
    parser.add_argument("--cancel", action="store_true", help="the cancel rows (issue 33)")
    args = parser.parse_args()
    if args.cancel:
        cancel_bench(args.members)
        return
    loads, medians = [os.getloadavg()[0]], {}
    with (
        bench_server() as server,
        bench_sampler(server),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=600) as http,
    ):
        d_sae = 64
        for name, (grid, traces) in ROWS.items():
            cold, warm = [], []
            for _ in range(args.runs):
                d_sae += 8  # new to the server: this run pays its traces
                seconds, members = sweep_s(http, grid(args.members), d_sae)
                cold.append(seconds)
                warm.append(sweep_s(http, grid(args.members), d_sae)[0])  # the same again
                loads.append(os.getloadavg()[0])
            medians[name] = statistics.median(cold)
            print(f"{name:30} {members} members: new config ({traces} trace(s)) median "
                  f"{medians[name]:.2f} s ({_listed(cold)}); again (none) median "
                  f"{statistics.median(warm):.2f} s ({_listed(warm)})", flush=True)  # fmt: skip
        if args.singles:
            single = singles_s(http, ROWS["seed (baseline)"][0](args.members))
            print(f"{args.members} single POST /api/jobs: {single:.2f} s")
    print(f"cores {len(os.sched_getaffinity(0))}, load (1 min) {min(loads):.1f}-{max(loads):.1f}")
    base = medians["seed (baseline)"]
    for name, median in medians.items():
        verdict = "met" if median <= 1.0 else "NOT met"
        print(f"{name:30} {median / base:.2f}x the seed sweep; goal <= 1 s: {verdict}")


def _listed(seconds: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


if __name__ == "__main__":
    main()
