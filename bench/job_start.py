"""Job start latency: from POST /api/jobs to the first optimizer step of a 2-rank `sae` job on
simulated devices (gloo), through a real `gpudeck api`, a real `gpudeck worker` (warm
forkserver), Postgres and Redis.

The end of each measurement is the timestamp rank 0 puts on its step-1 metrics event (taken
right after the first all-reduced backward and optimizer step). Beside it, in the same run, the
baseline: a cold `torch.multiprocessing.spawn` of 2 gloo ranks that import torch, init the
process group, build the same DDP model and take the same first step. Both are reported as
median and p90: a start that is slow one time in three is a slow start.

    .venv/bin/python bench/job_start.py [--runs 20] [--baseline-runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import redis
from _cold_rank import CONFIG, baseline_rank
from _server import bench_server, bench_worker, percentile


def _first_step_at(client: redis.Redis, job_id: int, after: float, timeout_s: float = 120) -> float:
    """rank 0's timestamp on the job's step-1 metrics (events older than `after` belong to an
    earlier database's job with the same id)."""
    stream, last = f"gpudeck:job:{job_id}:events", "0-0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for _, entries in client.xread({stream: last}, block=1000) or []:  # type: ignore[union-attr]
            for entry_id, fields in entries:
                last = entry_id
                ts = float(fields["ts"])
                step = json.loads(fields["data"]).get("step")
                if fields["type"] == "metrics" and step == 1 and ts >= after:
                    return ts
    raise RuntimeError(f"job {job_id} took no first step")


def _wait_done(http: httpx.Client, job_id: int) -> str:
    while True:
        status = http.get(f"/api/jobs/{job_id}").json()["status"]
        if status in ("succeeded", "failed", "cancelled", "lost"):
            return str(status)
        time.sleep(0.05)


def measure_gpudeck(
    http: httpx.Client, client: redis.Redis, runs: int, data_dir: Path, ranks: int = 2
) -> list[float]:
    """POST -> rank 0's first step of `runs` jobs, one after the other, on devices 0..ranks-1."""
    latencies = []
    for _ in range(runs):
        body = {
            "kind": "sae",
            "config": CONFIG,
            "devices": [{"index": i} for i in range(ranks)],
        }
        started = time.time()
        response = http.post("/api/jobs", json=body)
        response.raise_for_status()
        job_id = response.json()["id"]
        first_step = _first_step_at(client, job_id, started)
        latencies.append(first_step - started)
        run_dir = data_dir / "jobs" / str(job_id)
        launched = json.loads((run_dir / "launch.json").read_text())
        status = _wait_done(http, job_id)
        print(
            f"job {job_id}: POST -> ranks forked {launched['launched_at'] - started:.3f} s, "
            f"-> first step {first_step - started:.3f} s (warm: {launched['warm']}; "
            f"process group joined in {_join_s(run_dir)})",
            flush=True,
        )
        if status != "succeeded":
            raise RuntimeError(f"job {job_id} {status}")
    return latencies


def _join_s(run_dir: Path) -> str:
    """What each rank logged as its rendezvous time (rank.py), e.g. '0.021/0.019 s'."""
    found = []
    for log in sorted(run_dir.glob("rank*.log")):
        match = re.search(r"joined the process group in (\S+) s", log.read_text())
        found.append(match.group(1) if match else "?")
    return "/".join(found) + " s"


def measure_baseline(runs: int, ranks: int = 2, backend: str = "gloo") -> list[float]:
    """Cold torch.multiprocessing.spawn of `ranks` ranks -> rank 0's first step ("nccl": on
    GPUs 0..ranks-1)."""
    import torch.multiprocessing as tmp

    from gpudeck.engine.launch import free_port

    latencies = []
    for _ in range(runs):
        out = tempfile.mktemp(prefix="gpudeck-bench-")
        started = time.time()
        # join=True: spawn returns once every rank exited, and raises if one failed.
        tmp.spawn(
            baseline_rank,
            args=(free_port(), out, ranks, backend),
            nprocs=ranks,
            join=True,
            start_method="spawn",
        )
        latencies.append(float(Path(out).read_text()) - started)
        os.unlink(out)
        print(
            f"cold spawn of {ranks} {backend} ranks -> first step {latencies[-1]:.3f} s",
            flush=True,
        )
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--baseline-runs", type=int, default=5)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="gpudeck-bench-data-"))
    extra = {"GPUDECK_DATA_DIR": str(data_dir), "GPUDECK_AUTH": "on"}
    with (
        bench_server(devices="4x80GiB", extra_env=extra) as server,
        bench_worker(server, data_dir / "worker.log"),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http,
    ):
        client = redis.Redis.from_url(server.redis_url, decode_responses=True)
        ours = measure_gpudeck(http, client, args.runs, data_dir)
    baseline = measure_baseline(args.baseline_runs)
    _report(ours, baseline)


def _summary(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.3f} s, p90 {percentile(values, 0.9):.3f} s "
        f"over {len(values)} runs (min {min(values):.3f}, max {max(values):.3f})"
    )


def _report(ours: list[float], baseline: list[float]) -> None:
    ours_median, base_median = statistics.median(ours), statistics.median(baseline)
    print(f"cores: {len(os.sched_getaffinity(0))}")
    print(f"gpudeck  POST /api/jobs -> first optimizer step, 2 gloo ranks: {_summary(ours)}")
    print(f"baseline cold torch.multiprocessing.spawn -> first step: {_summary(baseline)}")
    print(
        f"speed-up: {base_median / ours_median:.1f}x median, "
        f"{percentile(baseline, 0.9) / percentile(ours, 0.9):.1f}x p90 (goal: <= 1 s and >= 5x)"
    )
    print(json.dumps({"gpudeck_s": ours, "baseline_s": baseline}))


if __name__ == "__main__":
    main()
