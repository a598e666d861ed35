"""What following jobs on a Slurm cluster costs the cluster (issue 35), beside a baseline
measured in the same run, against the real two-node test cluster (backend/tests/slurm/cluster.py).

    .venv/bin/python bench/slurm_poll.py [--arrays 5 --tasks 1000 --sample 200]

Tracked jobs: `arrays` held job arrays of `tasks` tasks each (held: they stay pending, so every
poll reads the same thousands of jobs). GPUDeck's poll (SlurmClient.poll, the executor's one
call per pass): one squeue and at most one sacct whatever the number of jobs, the arrays asked
for by id. Baseline: what a naive poller does, one `squeue -j <task>` per job, timed over
`sample` jobs and scaled to all of them (the count of commands is exact; the time is the
sample's per-job time times the jobs). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path, PurePosixPath
from tempfile import TemporaryDirectory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend" / "tests"))

from slurm.cluster import start_cluster

from gpudeck.slurm import ArraySpec, BatchSpec, LocalRunner, SlurmClient, render


class Counting(LocalRunner):
    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        object.__setattr__(self, "calls", [])

    calls: list[str]

    def __call__(self, argv, *, input_text=None, timeout_s):  # type: ignore[no-untyped-def]
        self.calls.append(argv[0])
        return super().__call__(argv, input_text=input_text, timeout_s=timeout_s)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arrays", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    cluster = start_cluster()
    try:
        runner = Counting(cluster.env)
        slurm = SlurmClient(runner, timeout_s=60)
        with TemporaryDirectory() as out:
            spec = BatchSpec(
                gpudeck_job_id=1, argv=("true",), output_dir=PurePosixPath(out), partition="gpu",
                held=True, array=ArraySpec(count=args.tasks, max_parallel=8),
            )  # fmt: skip
            arrays = [slurm.submit(render(spec)) for _ in range(args.arrays)]
            jobs = [f"{a}_{t}" for a in arrays for t in range(args.tasks)]
            timings = []
            for _ in range(args.polls):
                runner.calls.clear()
                started = time.perf_counter()
                states = slurm.poll(arrays)
                timings.append(time.perf_counter() - started)
                commands = list(runner.calls)
            assert all(states[j].state == "queued" for j in jobs), "a task not read pending"
            runner.calls.clear()
            started = time.perf_counter()
            for job in jobs[: args.sample]:
                slurm.poll([job])
            naive_each = (time.perf_counter() - started) / args.sample
            naive_commands = len(runner.calls) / args.sample
            for array_id in arrays:
                slurm.cancel(array_id)
    finally:
        cluster.stop()
    ours = sorted(timings)[len(timings) // 2]
    naive = naive_each * len(jobs)
    print(json.dumps({
        "jobs": len(jobs),
        "poll_commands": {c: commands.count(c) for c in sorted(set(commands))},
        "poll_s_median": round(ours, 3),
        "naive_commands": round(naive_commands * len(jobs)),
        "naive_s_scaled": round(naive, 1),
        "ratio_time": round(naive / ours, 1),
        "load": os.getloadavg(),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
