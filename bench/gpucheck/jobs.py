"""Section 3: job start and script jobs, through a real `gpudeck api` and `gpudeck worker` (warm
forkserver) on this node's GPUs (NVML; a dry run: simulated devices, gloo on CPU).

a. For 1, 2, 4, 8 ranks: POST /api/jobs (a tiny `sae` job) -> rank 0's first optimizer step,
   beside a cold torch.multiprocessing.spawn of as many ranks taking the same step
   (bench/job_start.py's measurements). Goal: <= 1 s median, the promise "launch in under a
   second".
b. examples/scripts/ddp_train.py as a script job on every GPU, POST -> `succeeded`, against
   plain `python -m torch.distributed.run` of the same script, alternated in pairs
   (bench/script_jobs.py's). Goal: overhead <= 1 s + 5 %, the median of the paired differences.
"""

from __future__ import annotations

import os
import shutil
import statistics
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import redis
from _server import NODE, DeviceProvider, bench_server, bench_worker
from job_start import measure_baseline, measure_gpudeck
from script_jobs import ARGS, EXAMPLE, example_job, gpudeck_job, plain_torchrun, script_settings
from sqlalchemy import text

from gpucheck.rows import Check, Row, median_p90
from gpudeck.core.db import make_engine
from gpudeck.telemetry.sampler import INVENTORY_REFRESH_S

# A dry run's script job: the example's every line (a report at step 10 and at the last) in a
# tenth of the steps; the seconds it measures there are the three starts, not the steps.
DRY_ARGS = ["--steps", "20", "--report-every", "10"]
START_GOAL = "<= 1 s median (launch in under a second)"
SCRIPT_GOAL = "<= 1 s + 5 % (median of paired differences)"
Figure = tuple[str, bool, str, dict[str, object]]  # figure, ok, command, data


@dataclass(frozen=True)
class Live:
    """The running api and worker, as a measurement sees them."""

    http: httpx.Client
    events: redis.Redis
    data_dir: Path


def run(check: Check) -> Iterator[Row]:
    root, code = check.work_dir / "jobs", check.work_dir / "jobs" / "code"
    code.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE, code)
    settings = {**script_settings(code), "GPUDECK_AUTH": "on", "GPUDECK_DATA_DIR": str(root)}
    provider: DeviceProvider = "simulated" if check.dry_run else "nvml"
    print(f"   starting gpudeck api and worker ({provider} devices)", flush=True)
    with (
        bench_server(f"{check.gpus}x80GiB", settings, device_provider=provider) as server,
        bench_worker(server, root / "worker.log"),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http,
        _node_reported(server.database_url),
    ):
        live = Live(http, redis.Redis.from_url(server.redis_url, decode_responses=True), root)
        # A dry run's figures are not judged: its devices' count alone runs every line.
        for ranks in [check.gpus] if check.dry_run else check.rank_counts():
            yield _row(f"start, {ranks} rank(s)", START_GOAL, partial(_start, check, live, ranks))
        yield _row(f"script job, {check.gpus} rank(s)", SCRIPT_GOAL, partial(_script, check, live))


@contextmanager
def _node_reported(database_url: str) -> Iterator[None]:
    """The bench node marked seen every INVENTORY_REFRESH_S, as its sampler would: the bench
    runs none, and a section longer than the offline threshold (90 s: 13 runs a rank count on
    a GPU, or a dry run on a loaded machine) found its node offline and every later job
    refused with a 409."""
    engine = make_engine(database_url, pool_size=1)
    stopped = threading.Event()

    def report() -> None:
        while not stopped.wait(INVENTORY_REFRESH_S):
            with engine.begin() as conn:
                conn.execute(text("UPDATE nodes SET last_seen_at = now() WHERE name = :node"),
                             {"node": NODE})  # fmt: skip

    reporter = threading.Thread(target=report, name="bench-node-report", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stopped.set()
        reporter.join()
        engine.dispose()


def _row(name: str, goal: str, measure: Callable[[], Figure]) -> Row:
    """The row `measure` makes, or a FAIL row saying what went wrong (the next rows still run)."""
    try:
        figure, ok, command, data = measure()
    except Exception as exc:  # a job that failed, a rank that raised: this row's figure
        print(f"   {name}: {type(exc).__name__}: {exc}", flush=True)
        return Row(name, f"did not finish: {type(exc).__name__}: {exc}"[:300], goal, "FAIL")
    return Row.judged(name, figure, goal, ok, command, **data)


def _baseline_ranks(check: Check, ranks: int) -> int:
    """The ranks of a baseline (a cold spawn, a plain torchrun): as many as ours on a GPU; one
    in a dry run, which does not judge the comparison and runs the same lines with one rank,
    while each rank more is a cold torch import (~3.5 s of CPU on 2 busy cores)."""
    return 1 if check.dry_run else ranks


def _start(check: Check, live: Live, ranks: int) -> Figure:
    # A dry run: one job and one cold spawn run every line of it.
    runs, baseline_runs = (1, 1) if check.dry_run else (10, 3)
    base_ranks = _baseline_ranks(check, ranks)
    print(
        f"   start, {ranks} rank(s): {runs} sae jobs, {baseline_runs} cold spawns of "
        f"{base_ranks} rank(s)",
        flush=True,
    )
    ours = measure_gpudeck(live.http, live.events, runs, live.data_dir, ranks)
    baseline = measure_baseline(baseline_runs, base_ranks, check.backend)
    (median, p90), (base_median, base_p90) = median_p90(ours), median_p90(baseline)
    figure = (
        f"POST -> first step median {median:.2f} s, p90 {p90:.2f} s ({runs} runs); cold "
        f"mp.spawn ({check.backend}) median {base_median:.2f} s, p90 {base_p90:.2f} s "
        f"({baseline_runs} runs): {base_median / median:.1f}x faster"
    )
    command = (
        f"POST /api/jobs (sae, {ranks} {check.device_type} device(s)) vs "
        f"torch.multiprocessing.spawn, {check.backend} (bench/job_start.py)"
    )
    data: dict[str, object] = {
        "ranks": ranks,
        "gpudeck_s": ours,
        "baseline_s": baseline,
        "median_s": median,
        "p90_s": p90,
        "baseline_median_s": base_median,
        "baseline_p90_s": base_p90,
        "speedup": base_median / median,
    }
    return figure, median <= 1.0, command, data


def _script(check: Check, live: Live) -> Figure:
    ranks, pairs = check.gpus, 1 if check.dry_run else 3
    args = DRY_ARGS if check.dry_run else ARGS
    visible = "" if check.dry_run else ",".join(map(str, range(ranks)))
    plain_env = {**os.environ, "CUDA_VISIBLE_DEVICES": visible}
    plain, ours = [], []
    plain_ranks = _baseline_ranks(check, ranks)
    for pair in range(pairs):
        plain.append(plain_torchrun(EXAMPLE, args, plain_env, plain_ranks))
        ours.append(gpudeck_job(live.http, example_job(args), ranks)[1])
        print(f"   pair {pair + 1}: plain {plain[-1]:.2f} s, gpudeck {ours[-1]:.2f} s", flush=True)
    # Each pair is taken back to back: the median of the differences is steadier than the
    # difference of the medians on a machine that other work shares.
    paired = [o - p for o, p in zip(ours, plain, strict=True)]
    overhead, plain_median = statistics.median(paired), statistics.median(plain)
    ours_median, budget = statistics.median(ours), 1.0 + 0.05 * plain_median
    figure = (
        f"overhead {overhead:+.2f} s (budget {budget:.2f} s): script job POST -> succeeded "
        f"median {ours_median:.2f} s, plain torchrun median {plain_median:.2f} s "
        f"({pairs} pairs), {ours_median / plain_median:.2f}x"
    )
    command = (
        f"python -m torch.distributed.run --nproc-per-node {ranks} "
        f"examples/scripts/ddp_train.py {' '.join(args)} vs the same as a script job "
        "(bench/script_jobs.py)"
    )
    data: dict[str, object] = {
        "ranks": ranks,
        "plain_s": plain,
        "gpudeck_s": ours,
        "paired_s": paired,
        "overhead_s": overhead,
        "budget_s": budget,
        "plain_median_s": plain_median,
        "gpudeck_median_s": ours_median,
        "ratio": ours_median / plain_median,
    }
    return figure, overhead <= budget, command, data
