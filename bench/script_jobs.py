"""Script jobs: what GPUDeck adds to plain torchrun, measured in the same run.

1. Wall time of the example (`examples/scripts/ddp_train.py`, 2 ranks on CPU with gloo):
   plain `python -m torch.distributed.run` from start to exit, against a GPUDeck script job
   on two simulated devices from POST /api/jobs to `succeeded` (a real `gpudeck api`, a real
   `gpudeck worker`, Postgres and Redis). Goal: overhead <= 1 s + 5 %.
2. Time to the script's first line (`bench/scripts/first_line.py` records time.time() as its
   first statement): plain torchrun from its start, GPUDeck from the POST.

Runs alternate (plain, GPUDeck, plain, ...) so that load on the machine hits both alike;
the overhead is the median of the paired differences.

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/script_jobs.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _server import bench_server, bench_worker

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "scripts" / "ddp_train.py"
PROBE = REPO / "bench" / "scripts" / "first_line.py"
ARGS = ["--steps", "200", "--report-every", "20"]
TERMINAL = ("succeeded", "failed", "cancelled", "lost")


def plain_torchrun(script: Path, args: list[str], env: dict[str, str], ranks: int = 2) -> float:
    """Seconds from starting torchrun to its exit."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks)]
    command += ["--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:0"]
    started = time.time()
    subprocess.run(
        [*command, str(script), *args], env=env, check=True, capture_output=True, timeout=600
    )
    return time.time() - started


def gpudeck_job(
    http: httpx.Client, config: dict[str, object], ranks: int = 2
) -> tuple[float, float]:
    """(POST time, seconds from the POST to `succeeded`) of a script job on devices 0..ranks-1."""
    devices = [{"index": i} for i in range(ranks)]
    body = {"kind": "script", "config": config, "devices": devices}
    for _ in range(40):
        started = time.time()
        response = http.post("/api/jobs", json=body)
        # On real GPUs the plain torchrun just before is an external process on the device
        # until the sampler's process list refreshes (every 5 s): GPUDeck refuses the device
        # (409) while it looks busy. The clock starts at the POST that is accepted.
        if response.status_code != 409:
            break
        print(f"   409, retrying: {response.text[:200]}", flush=True)
        time.sleep(0.5)
    if response.is_error:
        raise RuntimeError(f"POST /api/jobs: {response.status_code} {response.text[:300]}")
    job_id = response.json()["id"]
    # 10 Hz: faster polling would itself load the two cores the ranks run on.
    while (job := http.get(f"/api/jobs/{job_id}").json())["status"] not in TERMINAL:
        time.sleep(0.1)
    if job["status"] != "succeeded":
        raise RuntimeError(f"job {job_id} {job['status']}: {job['error']}")
    return started, time.time() - started


def script_settings(root: Path) -> dict[str, str]:
    """The server and worker settings that offer script jobs from the code root `root`."""
    return {
        "GPUDECK_KIND_MODULES": "gpudeck.kinds.script",
        "GPUDECK_SCRIPT_CODE_ROOTS": str(root),
        "GPUDECK_SCRIPT_INTERPRETERS": f"default={sys.executable}",
        "GPUDECK_SCRIPT_ENV_ALLOWLIST": "FIRST_LINE_FILE",
    }


def example_job(args: list[str]) -> dict[str, object]:
    """The script job config that runs the example with `args`."""
    return {"entrypoint": EXAMPLE.name, "args": args, "memory_per_device_bytes": 2**28}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gpudeck-bench-scripts-"))
    shutil.copy(EXAMPLE, root)
    shutil.copy(PROBE, root)
    first_line_file = root / "first_line.txt"
    script_env = {**script_settings(root), "GPUDECK_AUTH": "on"}
    plain_env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "FIRST_LINE_FILE": str(first_line_file)}
    with (
        bench_server(devices="2x80GiB", extra_env=script_env) as server,
        bench_worker(server, root / "worker.log", {"GPUDECK_DATA_DIR": str(root / "data")}),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http,
    ):
        figures = measure(http, args.runs, plain_env, first_line_file)
    report(figures)


def measure(
    http: httpx.Client, runs: int, plain_env: dict[str, str], first_line_file: Path
) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {k: [] for k in ("plain", "ours", "plain_1st", "ours_1st")}
    example = example_job(ARGS)
    probe = {
        "entrypoint": PROBE.name,
        "env": {"FIRST_LINE_FILE": str(first_line_file)},
        "memory_per_device_bytes": 2**28,
    }
    for run in range(runs):
        figures["plain"].append(plain_torchrun(EXAMPLE, ARGS, plain_env))
        figures["ours"].append(gpudeck_job(http, example)[1])
        started = time.time()
        plain_torchrun(PROBE, [], plain_env)
        figures["plain_1st"].append(float(first_line_file.read_text()) - started)
        posted, _ = gpudeck_job(http, probe)
        figures["ours_1st"].append(float(first_line_file.read_text()) - posted)
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in figures.items()))
    return figures


def report(figures: dict[str, list[float]]) -> None:
    med = {k: statistics.median(v) for k, v in figures.items()}
    # Each run pairs a plain and a GPUDeck run taken back to back: on a shared machine the
    # median of the differences is steadier than the difference of the medians.
    paired = [o - p for o, p in zip(figures["ours"], figures["plain"], strict=True)]
    paired_1st = [o - p for o, p in zip(figures["ours_1st"], figures["plain_1st"], strict=True)]
    overhead = statistics.median(paired)
    budget = 1.0 + 0.05 * med["plain"]
    print(f"cores: {len(os.sched_getaffinity(0))}, runs: {len(figures['plain'])}")
    print(f"example, plain torchrun:             median {med['plain']:.2f} s")
    print(f"example, GPUDeck POST -> succeeded:  median {med['ours']:.2f} s")
    print(
        f"overhead (median of paired differences) {overhead:+.2f} s, "
        f"ratio of medians {med['ours'] / med['plain']:.3f}x; "
        f"goal <= {budget:.2f} s (1 s + 5 %): {'met' if overhead <= budget else 'NOT met'}"
    )
    print(f"first line, plain torchrun start:    median {med['plain_1st']:.2f} s")
    print(f"first line, GPUDeck POST:            median {med['ours_1st']:.2f} s")
    print(f"first line, paired difference:       median {statistics.median(paired_1st):+.2f} s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
