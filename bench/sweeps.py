"""Sweeps (issue 27): one request for 1,000 members, against 1,000 single submits, same run.

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/sweeps.py [--members 1000]

A real `gpudeck api` and Postgres, 8 simulated devices, no scheduler (the members only queue).
Measured: the wall time of POST /api/sweeps with a grid of `--members` SAE members (k x seed),
answered with every member created; baseline, same run: the same members as single POST
/api/jobs one after another (each with `hold`, so that none starts: both only queue). Goal:
1,000 members in <= 1 s.

    ... ../bench/sweeps.py --cancel [--members 1000]

Cancel (issue 33): 3 sweeps of `--members` waiting members each, cancelled through POST
/api/sweeps/{id}/cancel one after another, timed until every member has ended (each answer
lists them); baseline, same run: 3 more such sweeps cancelled by the loop the route ran before,
job_service.cancel_job per member in one transaction (in process: the route's time was that
loop's and the answer's). Goal: all 3,000 ended in <= 5 s.
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

from gpudeck.core.db import make_engine, make_sessionmaker, transaction
from gpudeck.models import JobStatus
from gpudeck.services import job_state, sweeps
from gpudeck.services import jobs as job_service

CONFIG = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}


def _waiting_sweep(http: httpx.Client, members: int) -> int:
    body = {
        "job": {"kind": "sae", "config": CONFIG, "count": 1},
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
            for job in sweeps.member_jobs(session, sweep_id):
                if JobStatus(job.status) not in job_state.TERMINAL:
                    job_service.cancel_job(session, job.id)
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
    parser.add_argument("--cancel", action="store_true", help="the cancel rows (issue 33)")
    args = parser.parse_args()
    if args.cancel:
        cancel_bench(args.members)
        return
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
