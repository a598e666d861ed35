"""The scheduler's figures (issue 13), each beside a baseline measured in the same run.

    .venv/bin/python bench/scheduler.py pass    [--waiting 10000 --across 0.2 --preemptible]
    .venv/bin/python bench/scheduler.py trace   [--jobs 800 --seed 1]  # FIFO vs fair vs backfill
    .venv/bin/python bench/scheduler.py expect  [--jobs 800 --seed 1]  # expected vs real starts
    .venv/bin/python bench/scheduler.py snapshot [--waiting 10000]  # the same, read from Postgres
    .venv/bin/python bench/scheduler.py submit  [--clients 200 --seconds 15]
    .venv/bin/python bench/scheduler.py wake    [--runs 12]

- pass: the pure scheduling pass (services.queue.plan.plan) over N waiting jobs; baseline: the
  same pass in FIFO order without backfill (the least a queue must do: order and try the head).
  64 devices on 8 nodes. `--preemptible`: device 0 of each node is held by a preemptible job
  of priority -1, so every waiting job above it looks for victims (none lets it start).
  `--across F`: that share of the jobs span nodes (half named devices on two nodes, half a
  count spread over nodes: `nodes` 2 or `devices_per_node` 4).
- snapshot: the pass as the scheduler runs it, the queue read from Postgres (8 nodes of 8
  devices, each held; N waiting jobs), with its cache of unchanged rows and with every row
  read (as the queue views do); baseline: deciding alone on the same snapshot.
- trace: a seeded synthetic trace (sizes 1-8 devices, log-normal durations, time limits 1.5-4x
  the real duration, four users, some high-priority jobs) replayed through the same `plan` with
  a simulated clock; utilisation, mean wait and p95 bounded slowdown for FIFO, priority + fair
  share, and priority + fair share + EASY backfill.
- expect: the same trace (fair share + backfill); for each job that waited >= 1 min, the
  expected start its first pass gave it against its real start, as a share of its wait: with
  measured rates and owners' run shares (now) and with time limits alone (before).
- submit: 200 concurrent clients submitting while every device is busy (each submit only
  queues) to a real `gpudeck api` and Postgres: submits/s, p50/p99; baseline GET /api/health.
- wake: a job ends and the next queued job for its devices takes its first optimizer step
  (rank 0's step-1 metrics timestamp minus the first job's finished_at): real api, scheduler,
  worker. Baseline: today's start on free devices, POST -> first step, same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpudeck.services.queue.plan import Dev, Holding, Key, Policy, Waiting, plan

NODES, PER_NODE = 8, 8


def devices(busy: dict[tuple[str, str], int] | None = None) -> list[Dev]:
    busy = busy or {}
    return [
        Dev(f"n{n}", f"n{n}-{i}", i, holder=busy.get((f"n{n}", f"n{n}-{i}")))
        for n in range(NODES)
        for i in range(PER_NODE)
    ]


# ----- one pass -----------------------------------------------------------------------------


def _waiting_job(rng: random.Random, i: int, across: float) -> Waiting:
    node = rng.randrange(NODES)
    common: dict[str, Any] = {
        "id": 10 + i,
        "owner": f"u{rng.randrange(8)}",
        "node": f"n{node}",
        "submitted_at": float(i),
        "time_limit_s": float(rng.randrange(60, 86400)),
        "priority": rng.choice([0, 0, 0, 1, -1]),
    }
    if rng.random() >= across:
        return Waiting(world_size=rng.choice([1, 1, 2, 2, 4, 8]), **common)
    if rng.random() < 0.5:  # named devices on two nodes
        other = (node + 1 + rng.randrange(NODES - 1)) % NODES
        per = rng.choice([1, 2, 4])
        picked = [(f"n{n}", f"n{n}-{i}") for n in (node, other) for i in range(per)]
        return Waiting(
            world_size=len(picked),
            requested=tuple(u for _, u in picked),
            requested_nodes=tuple(n for n, _ in picked),
            **common,
        )
    size = rng.choice([4, 8, 16])
    counts = (1, 2) if rng.random() < 0.5 else (size // 4,)  # nodes 2, or 4 per node
    return Waiting(world_size=size, node_counts=counts, **common)


def bench_pass(
    waiting_n: int,
    repeats: int,
    across: float = 0.0,
    preemptible: bool = False,
    sweep: int = 0,
) -> None:
    rng = random.Random(3)
    busy = {(d.node, d.uuid): 1 for d in devices()}  # every device held: all wait
    if preemptible:
        busy.update({(f"n{n}", f"n{n}-0"): 100 + n for n in range(NODES)})
    cluster = devices(busy)
    holding = [Holding(1, "u0", tuple(k for k, j in busy.items() if j == 1), 5000.0)]
    holding += [
        Holding(j, "u9", (k,), 5000.0, priority=-1, preemptible=True)
        for k, j in busy.items()
        if j != 1
    ]
    waiting = [_waiting_job(rng, i, across) for i in range(waiting_n)]
    # `sweep`: that many of them are one sweep's members, 8 of which may run at once.
    waiting[:sweep] = [
        dataclasses.replace(w, sweep=1, sweep_max_parallel=8) for w in waiting[:sweep]
    ]
    usage = {f"u{i}": rng.random() * 1e5 for i in range(8)}

    def timed(policy: Policy, explain: bool) -> float:
        started = time.perf_counter()
        plan(
            cluster,
            holding,
            waiting,
            now=1000.0,
            usage=usage,
            policy=policy,
            explain=explain,
        )
        return time.perf_counter() - started

    # Interleaved, so the machine's load weighs on each case alike.
    cases = {
        "scheduler's pass (decides; explain=False)": (Policy(), False),
        "explained pass (queue view, summary)": (Policy(), True),
        "baseline FIFO, no backfill, explained": (
            Policy(order="fifo", backfill=False),
            True,
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (policy, explain) in cases.items():
            times[name].append(timed(policy, explain))
    base = statistics.median(times["baseline FIFO, no backfill, explained"])
    print(
        f"one pass, {waiting_n} waiting jobs ({across:.0%} across nodes), "
        f"{NODES * PER_NODE} devices on {NODES} nodes"
        + (f", {NODES} held by preemptible jobs" if preemptible else "")
        + (f", {sweep} of them one sweep's members" if sweep else "")
    )
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:44s} median {med * 1e3:6.1f} ms over {repeats} ({med / base:.2f}x)")
    print("  goal: the scheduler's pass <= 50 ms")


# ----- the pass as the scheduler runs it: the queue read from Postgres --------------------


def _fill_queue(database_url: str, waiting_n: int) -> None:
    """NODES nodes of PER_NODE devices, each node held by one running job, and `waiting_n`
    waiting jobs of 1-8 devices on them, a tenth naming a device (as `pass` has them)."""
    from sqlalchemy import text

    from gpudeck.core.config import Settings
    from gpudeck.core.db import make_engine, make_sessionmaker, transaction
    from gpudeck.services.cluster.inventory import upsert_inventory
    from gpudeck.telemetry.simulated import simulated_inventory

    engine = make_engine(database_url, pool_size=1)
    spec = Settings(simulated_devices=f"{PER_NODE}x80GiB").simulated
    with transaction(make_sessionmaker(engine)) as session:
        for n in range(NODES):
            upsert_inventory(session, f"n{n}", "simulated", simulated_inventory(spec, f"n{n}"))
        session.execute(
            text(
                "INSERT INTO jobs (name, kind, config, status, owner, node, world_size, "
                " progress_step, started_at, time_limit_s) "
                "SELECT 'holder', 'sae', '{}', 'running', 'u0', name, :per, 0, now(), 3600 "
                "FROM nodes WHERE name LIKE 'n%'"
            ),
            {"per": PER_NODE},
        )
        session.execute(
            text(
                "INSERT INTO allocations (job_id, node, gpu_uuid, gpu_index, rank) "
                "SELECT j.id, d.node, d.uuid, d.index, d.index FROM jobs j JOIN devices d "
                "ON d.node = j.node WHERE j.name = 'holder'"
            )
        )
        session.execute(
            text(
                "INSERT INTO jobs (name, kind, config, status, owner, node, world_size, "
                " progress_step, time_limit_s, priority, requested_devices, created_at) "
                "SELECT 'w' || i, 'sae', '{}', 'queued', 'u' || (i % 8), 'n' || (i % :nodes), "
                " CASE WHEN i % 10 = 0 THEN 1 ELSE 1 + (i * 7 % 8) END, 0, "
                " 600 + (i * 37 % 7200), CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END, "
                " CASE WHEN i % 10 = 0 THEN (SELECT jsonb_build_array(uuid) FROM devices "
                "   WHERE node = 'n' || (i % :nodes) AND index = 0) END, "
                " now() - make_interval(secs => :n - i) "
                "FROM generate_series(1, :n) AS i"
            ),
            {"n": waiting_n, "nodes": NODES},
        )
    with engine.begin() as conn:  # the statistics autovacuum keeps on a queue that grew
        conn.execute(text("ANALYZE"))
    engine.dispose()


def bench_snapshot(waiting_n: int, repeats: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _server import _local_database, _prepare

    from gpudeck.core.db import make_engine, make_sessionmaker, transaction
    from gpudeck.core.heap import freeze_startup_objects
    from gpudeck.services.queue import snapshot as queue_snapshot
    from gpudeck.services.queue import summary as queue_summary
    from gpudeck.services.queue import waiting as queue_waiting

    database_url = os.environ.get("GPUDECK_BENCH_DATABASE_URL") or _local_database()
    if database_url is None:
        raise SystemExit("snapshot needs a Postgres (GPUDECK_BENCH_DATABASE_URL)")
    _prepare(database_url, "1x80GiB")
    _fill_queue(database_url, waiting_n)
    engine = make_engine(database_url, pool_size=1)
    sessions = make_sessionmaker(engine)
    freeze_startup_objects()  # as `gpudeck scheduler` does once started
    full: list[float] = []
    cached: list[float] = []
    pure: list[float] = []
    cache = queue_waiting.WaitingCache()
    for _ in range(repeats + 1):  # the first warms caches (and fills `cache`), and is dropped
        for times, kept in ((full, None), (cached, cache)):
            started = time.perf_counter()
            with transaction(sessions) as session:
                decided, _ = queue_summary.compute(
                    session, None, half_life_s=7 * 86400, explain=False, cache=kept
                )
            times.append(time.perf_counter() - started)
        with transaction(sessions) as session:
            now, devs, holding, waiting = queue_snapshot.snapshot(session, None)
            usage = queue_snapshot.usage_by_owner(session, 7 * 86400)
        started = time.perf_counter()
        plan(devs, holding, waiting, now=now, usage=usage, explain=False)
        pure.append(time.perf_counter() - started)
    engine.dispose()
    assert len(waiting) == waiting_n and not decided.starts, "every device is held: all wait"
    base = statistics.median(pure[1:])
    print(
        f"the scheduler's pass read from Postgres, {waiting_n} waiting jobs, "
        f"{NODES * PER_NODE} devices on {NODES} nodes, median of {repeats}"
    )
    for name, times in (
        ("the scheduler's (changed rows only)", cached),
        ("every row read in full (views)", full),
    ):
        med = statistics.median(times[1:])
        print(f"  {name:36s} {med * 1e3:7.1f} ms ({med / base:.2f}x)")
    print(f"  baseline: decide alone (plan)        {base * 1e3:7.1f} ms, same snapshot")


# ----- trace replay -------------------------------------------------------------------------


@dataclass
class TraceJob:
    id: int
    owner: str
    node: str
    size: int
    arrival: float
    duration: float
    limit: float
    priority: int


def make_trace(n: int, seed: int, load: float = 1.05) -> list[TraceJob]:
    rng = random.Random(seed)
    sizes, weights = [1, 2, 3, 4, 5, 6, 7, 8], [30, 20, 8, 15, 4, 4, 4, 15]
    mean_size = sum(s * w for s, w in zip(sizes, weights, strict=True)) / sum(weights)
    mu, sigma = math.log(900), 1.3
    mean_duration = math.exp(mu + sigma**2 / 2)
    # By default offered load a little above capacity, so a queue forms and policies matter.
    rate = load * NODES * PER_NODE / (mean_size * mean_duration)
    jobs, clock = [], 0.0
    for i in range(n):
        clock += rng.expovariate(rate)
        duration = min(rng.lognormvariate(mu, sigma), 48 * 3600)
        jobs.append(
            TraceJob(
                id=i + 1,
                owner=f"user{rng.randrange(4)}",
                node=f"n{rng.randrange(NODES)}",
                size=rng.choices(sizes, weights)[0],
                arrival=clock,
                duration=duration,
                limit=math.ceil(duration * rng.uniform(1.5, 4.0) / 60) * 60,
                priority=1 if rng.random() < 0.1 else 0,
            )
        )
    return jobs


# How a running job's rate is known in `replay(estimate=True)`, as the relay measures it:
# nothing for its first RATE_AFTER_S (start-up, then worker/relay.RATE_WINDOW_S), then its
# true rate off by a per-job error of RATE_ERROR (standard deviation, relative).
RATE_AFTER_S = 60.0
RATE_ERROR = 0.05


def replay(
    trace: list[TraceJob],
    policy: Policy,
    half_life_s: float = 7 * 86400,
    *,
    estimate: bool = False,
    seed: int = 0,
) -> dict[str, Any]:
    """Event by event: at each arrival or end, one pass; starts take effect at once.

    Also records, for each job that had to wait, the expected start its first pass gave it
    and when it really started. `estimate`: the pass sees what GPUDeck now knows (services/
    queue.py): a running job's end from its measured rate once it has one, and each owner's
    share of the time limit their recent jobs ran; without it, time limits only (before)."""
    rng = random.Random(seed)
    rate_error = {j.id: rng.gauss(0.0, RATE_ERROR) for j in trace}
    by_id = {j.id: j for j in trace}
    expected: dict[int, tuple[float, bool]] = {}
    pending = sorted(trace, key=lambda j: j.arrival)
    waiting: dict[int, TraceJob] = {}
    running: dict[int, tuple[float, tuple[tuple[str, str], ...]]] = {}
    started: dict[int, float] = {}
    finished: list[tuple[str, float, float]] = []  # owner, device-seconds, end
    finished_runs: list[tuple[str, float]] = []  # owner, share of the limit it ran
    busy_device_s, clock, i = 0.0, 0.0, 0
    while i < len(pending) or waiting or running:
        next_end = min((end for end, _ in running.values()), default=math.inf)
        next_arrival = pending[i].arrival if i < len(pending) else math.inf
        clock = min(next_end, next_arrival)
        for job_id, (end, _) in list(running.items()):
            if end <= clock:
                job = by_id[job_id]
                finished.append((job.owner, job.size * job.duration, end))
                finished_runs.append((job.owner, min(1.0, job.duration / job.limit)))
                del running[job_id]
        while i < len(pending) and pending[i].arrival <= clock:
            waiting[pending[i].id] = pending[i]
            i += 1
        holder = {k: job_id for job_id, (_, keys) in running.items() for k in keys}
        holding = [
            _holding(by_id[j], keys, started[j], clock, rate_error[j], estimate)
            for j, (_, keys) in running.items()
        ]
        shares = _run_shares(finished_runs) if estimate else None
        usage: dict[str, float] = {}
        for owner, device_s, end in finished:
            usage[owner] = usage.get(owner, 0.0) + device_s * 0.5 ** ((clock - end) / half_life_s)
        for j in running:
            owner = by_id[j].owner
            usage[owner] = usage.get(owner, 0.0) + by_id[j].size * (clock - started[j])
        queue = [
            Waiting(
                id=j.id,
                owner=j.owner,
                node=j.node,
                world_size=j.size,
                submitted_at=j.arrival,
                time_limit_s=j.limit,
                priority=j.priority,
            )
            for j in waiting.values()
        ]
        out = plan(
            devices(holder), holding, queue, now=clock, usage=usage, policy=policy,
            run_shares=shares,
        )  # fmt: skip
        for job_id, info in out.infos.items():
            if job_id not in expected and info.expected_start is not None:
                expected[job_id] = (info.expected_start, info.from_time_limits)
        for s in out.starts:
            job = waiting.pop(s.job_id)
            started[job.id] = clock
            running[job.id] = (clock + job.duration, tuple(d.key for d in s.devices))
            busy_device_s += job.size * job.duration
    first, last = (
        min(j.arrival for j in trace),
        max(started[j.id] + j.duration for j in trace),
    )
    waits = [started[j.id] - j.arrival for j in trace]
    slowdowns = sorted(
        (started[j.id] - j.arrival + j.duration) / max(j.duration, 10.0) for j in trace
    )
    return {
        "utilisation": busy_device_s / (NODES * PER_NODE * (last - first)),
        "mean_wait_s": statistics.fmean(waits),
        "p95_slowdown": slowdowns[int(0.95 * (len(slowdowns) - 1))],
        "makespan_h": (last - first) / 3600,
        # (wait, expected wait, from time limits) of each job that waited
        "expected": [
            (started[j] - by_id[j].arrival, when - by_id[j].arrival, bound)
            for j, (when, bound) in expected.items()
        ],
    }


def _holding(
    job: TraceJob, keys: tuple[Key, ...], start: float, now: float, error: float, estimate: bool
) -> Holding:
    """A running job as the pass sees it: its time limit, or, once its rate is measured (and
    `estimate`), the time its steps left take at that rate, never past the limit."""
    limit_at = start + job.limit
    if not estimate or now - start < RATE_AFTER_S:
        return Holding(job.id, job.owner, keys, limit_at)
    left = max(0.0, job.duration - (now - start)) / (1.0 + error)
    return Holding(job.id, job.owner, keys, min(limit_at, now + left), estimated=True)


def _run_shares(finished_runs: list[tuple[str, float]]) -> dict[str, float]:
    """services.queue.snapshot.run_shares over the replay: each owner's median of their last 20."""
    by_owner: dict[str, list[float]] = {}
    for owner, share in finished_runs:
        by_owner.setdefault(owner, []).append(share)
    return {o: statistics.median(v[-20:]) for o, v in by_owner.items() if len(v) >= 3}


def bench_expect(jobs: int, seed: int, load: float) -> None:
    """Expected starts against real ones on the replayed trace (fair share + backfill), for
    the jobs that waited at least a minute: what GPUDeck now estimates, beside the time
    limits alone (before), same trace."""
    trace = make_trace(jobs, seed, load)
    policy = Policy(order="fair", backfill=True)
    print(
        f"expected starts: {jobs} jobs, seed {seed}, offered load {load:.2f}, "
        f"{NODES * PER_NODE} devices on {NODES} nodes"
    )
    print(f"  rate known {RATE_AFTER_S:.0f} s after a start, off by {RATE_ERROR:.0%} (sd)")
    results = {}
    for name, estimate in (("time limits (before)", False), ("measured rates + run shares", True)):
        run = replay(trace, policy, estimate=estimate, seed=seed)
        waited = [(w, e, b) for w, e, b in run["expected"] if w >= 60]
        errors = sorted(abs(e - w) / w for w, e, _ in waited)
        bounded = sum(1 for _, _, b in waited if b)
        median = statistics.median(errors)
        p90 = errors[int(0.9 * (len(errors) - 1))]
        results[name] = {"median": median, "p90": p90, "n": len(waited), "bound": bounded}
        print(
            f"  {name:30s} median error {median:.0%} of the wait, p90 {p90:.0%} "
            f"({len(waited)} jobs waited >= 1 min; {bounded} answers counted a job ahead for "
            f"its whole limit), utilisation {run['utilisation']:.1%}"
        )
    ratio = (
        results["measured rates + run shares"]["median"] / results["time limits (before)"]["median"]
    )
    verdict = "met" if results["measured rates + run shares"]["median"] <= 0.2 else "NOT met"
    print(f"  median error now / before: {ratio:.2f}x; goal <= 20 %: {verdict}")


def bench_trace(jobs: int, seed: int) -> None:
    trace = make_trace(jobs, seed)
    policies = {
        "FIFO": Policy(order="fifo", backfill=False),
        "priority + fair share": Policy(order="fair", backfill=False),
        "priority + fair share + backfill": Policy(order="fair", backfill=True),
    }
    results = {name: replay(trace, p) for name, p in policies.items()}
    base = results["FIFO"]["utilisation"]
    print(f"trace: {jobs} jobs, seed {seed}, {NODES * PER_NODE} devices on {NODES} nodes")
    for name, r in results.items():
        print(
            f"  {name:34s} utilisation {r['utilisation']:.1%} "
            f"({r['utilisation'] / base:.2f}x FIFO), "
            f"mean wait {r['mean_wait_s'] / 60:.0f} min, p95 slowdown {r['p95_slowdown']:.1f}, "
            f"makespan {r['makespan_h']:.1f} h"
        )
    print(json.dumps(results))


# ----- submits while busy -------------------------------------------------------------------


@contextlib.contextmanager
def _scheduler(server: Any) -> Iterator[None]:
    """A `gpudeck scheduler` beside the API, as deployed: its pass summary is what a queued
    submit's answer reads (without one, every answer would run a pass of its own)."""
    env = {
        **os.environ,
        "GPUDECK_DATABASE_URL": server.database_url,
        "GPUDECK_REDIS_URL": server.redis_url,
        "GPUDECK_NODE_NAME": "bench",
        "GPUDECK_LOG_LEVEL": "warning",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudeck", "scheduler"], env=env, start_new_session=True
    )
    try:
        time.sleep(3)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def _api_cpu_s() -> float:
    """CPU seconds used so far by the `gpudeck api` processes this bench started (all workers):
    a request's CPU cost, which the machine's load does not inflate as it does wall time."""
    import psutil

    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "api" in proc.cmdline() or "multiprocessing" in " ".join(proc.cmdline()):
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def bench_submit(clients: int, seconds: float, workers: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _load import run_load
    from _server import NODE, bench_server, percentile

    with bench_server(workers=workers) as server, _scheduler(server):
        import httpx

        filler = {"kind": "sae", "config": {"batch_size": 512, "steps": 10}, "count": 8}
        httpx.post(
            f"{server.url}/api/jobs", json=filler, headers=server.headers, timeout=300
        ).raise_for_status()
        body = {
            "kind": "sae",
            "config": {"batch_size": 64, "steps": 10},
            "devices": [{"index": 0, "node": NODE}],
        }
        load = {"clients": clients, "seconds": seconds, "headers": server.headers}
        # Not counted: the API's first seconds import PyTorch for the memory estimate (a
        # thread), which a short run would bill to the requests.
        asyncio.run(run_load(server.url, "/api/jobs", body=body, **{**load, "seconds": 8}))
        cpu0 = _api_cpu_s()
        ours = asyncio.run(run_load(server.url, "/api/jobs", body=body, **load))
        cpu1 = _api_cpu_s()
        base = asyncio.run(run_load(server.url, "/api/health", **load))
        cpu2 = _api_cpu_s()
    for name, result, cpu_s in (
        ("submit (queues)", ours, cpu1 - cpu0),
        ("baseline GET /api/health", base, cpu2 - cpu1),
    ):
        values = result.latencies
        print(
            f"  {name:26s} {len(values) / seconds:7.1f}/s, "
            f"p50 {percentile(values, 0.5) * 1e3:.0f} ms, "
            f"p99 {percentile(values, 0.99) * 1e3:.0f} ms ({clients} clients, {seconds:g} s); "
            f"API CPU {cpu_s / max(1, len(values)) * 1e3:.2f} ms a request; "
            f"statuses {dict(sorted(result.statuses.items()))}"
        )
        if result.first_error:
            raise SystemExit(f"{name}: answers outside 2xx, first: {result.first_error}")


# ----- devices free -> next job's first step ------------------------------------------------


def bench_wake(runs: int) -> None:
    import httpx
    import redis

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _server import bench_server
    from job_start import CONFIG, _first_step_at, _wait_worker

    data_dir = Path(tempfile.mkdtemp(prefix="gpudeck-bench-data-"))
    extra = {"GPUDECK_DATA_DIR": str(data_dir), "GPUDECK_AUTH": "on"}
    with bench_server(devices="4x80GiB", extra_env=extra) as server:
        env = {
            **os.environ,
            **extra,
            "GPUDECK_DATABASE_URL": server.database_url,
            "GPUDECK_REDIS_URL": server.redis_url,
            "GPUDECK_NODE_NAME": "bench",
            "GPUDECK_LOG_LEVEL": "info",
        }
        parts = []
        for part in ("worker", "scheduler"):
            log = (data_dir / f"{part}.log").open("wb")
            parts.append(
                subprocess.Popen(
                    [sys.executable, "-m", "gpudeck", part],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        try:
            _wait_worker(data_dir / "worker.log", parts[0])
            client = redis.Redis.from_url(server.redis_url, decode_responses=True)
            devices_body = [{"index": 0}, {"index": 1}]
            with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http:

                def submit(config: dict) -> int:
                    body = {"kind": "sae", "config": config, "devices": devices_body}
                    response = http.post("/api/jobs", json=body)
                    response.raise_for_status()
                    return int(response.json()["id"])

                def wait_end(job_id: int) -> dict:
                    while True:
                        job = http.get(f"/api/jobs/{job_id}").json()
                        if job["finished_at"]:
                            return job
                        time.sleep(0.02)

                wake, start = [], []
                for _ in range(runs):
                    sent = time.time()
                    first = submit(CONFIG)  # devices free: today's start
                    start.append(_first_step_at(client, first, sent) - sent)
                    second = submit(CONFIG)  # waits for `first`
                    ended = wait_end(first)
                    freed = datetime.fromisoformat(ended["finished_at"]).timestamp()
                    wake.append(_first_step_at(client, second, freed) - freed)
                    wait_end(second)
        finally:
            for proc in parts:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(60)
    print(
        f"  devices free -> next queued job's first step: median {statistics.median(wake):.3f} s, "
        f"max {max(wake):.3f} s over {runs} (goal <= 1 s)"
    )
    print(
        f"  baseline POST on free devices -> first step:  median {statistics.median(start):.3f} s, "
        f"max {max(start):.3f} s over {runs}"
    )
    print(json.dumps({"wake_s": wake, "start_s": start}))


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pass")
    p.add_argument("--waiting", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--across", type=float, default=0.0, help="share of jobs across nodes")
    p.add_argument("--preemptible", action="store_true", help="a preemptible job on each node")
    p.add_argument("--sweep", type=int, default=0, help="this many are one sweep's members")
    t = sub.add_parser("trace")
    t.add_argument("--jobs", type=int, default=800)
    t.add_argument("--seed", type=int, default=1)
    e = sub.add_parser("expect")
    e.add_argument("--jobs", type=int, default=800)
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--load", type=float, default=0.8, help="offered load / capacity")
    s = sub.add_parser("submit")
    s.add_argument("--clients", type=int, default=200)
    s.add_argument("--seconds", type=float, default=15)
    s.add_argument("--workers", type=int, default=1, help="API processes")
    n = sub.add_parser("snapshot")
    n.add_argument("--waiting", type=int, default=10_000)
    n.add_argument("--repeats", type=int, default=7)
    w = sub.add_parser("wake")
    w.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    if args.what == "pass":
        bench_pass(args.waiting, args.repeats, args.across, args.preemptible, args.sweep)
    elif args.what == "trace":
        bench_trace(args.jobs, args.seed)
    elif args.what == "expect":
        bench_expect(args.jobs, args.seed, args.load)
    elif args.what == "snapshot":
        bench_snapshot(args.waiting, args.repeats)
    elif args.what == "submit":
        bench_submit(args.clients, args.seconds, args.workers)
    else:
        bench_wake(args.runs)


if __name__ == "__main__":
    main()
