"""A world-of-one SAE trainer against an earlier commit's, same run: steps/s of one rank with one
CPU thread (as a sharing rank gets), on an activation file, interleaved runs (issue 37: the
bare model without DDP, and the next batch read while the step runs).

    cd backend && ../.venv/bin/python ../bench/sae_one_rank.py --baseline-ref HEAD~1 [--repeats 5]

Each run is bench/trainer_throughput.trainer_rate in a process whose `gpudeck` is that tree's
(the baseline from `git archive`); the figure is the trainer's own activations/s over the
second half of the run, divided by the batch. Prints each repeat, the medians, their ratio and
the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
D_IN, D_SAE, BATCH, ROWS = 256, 2048, 1024, 65536

_RUN = """
import sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from trainer_throughput import trainer_rate
rate = trainer_rate(Path({data!r}), 1, {steps}, ({d_in}, {d_sae}, {batch}))
print(rate / {batch})
"""


def steps_per_s(backend: Path, data_dir: Path, steps: int) -> float:
    code = _RUN.format(
        bench=str(REPO / "bench"), data=str(data_dir), steps=steps, d_in=D_IN, d_sae=D_SAE,
        batch=BATCH,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(backend), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-ref", default="HEAD")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.baseline_ref, "backend"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        data_dir = Path(tmp) / "data"
        (data_dir / "datasets").mkdir(parents=True)
        acts = np.maximum(np.random.default_rng(0).standard_normal((ROWS, D_IN)), 0)
        np.save(data_dir / "datasets" / "acts.npy", acts.astype(np.float32))
        trees = {args.baseline_ref: base / "backend", "working tree": REPO / "backend"}
        rates: dict[str, list[float]] = {name: [] for name in trees}
        load_before = os.getloadavg()
        for repeat in range(args.repeats):
            for name, backend in trees.items():
                rates[name].append(steps_per_s(backend, data_dir, args.steps))
            print(
                f"repeat {repeat + 1}: " + ", ".join(f"{n} {r[-1]:.2f}" for n, r in rates.items())
            )
        load_after = os.getloadavg()
    print(
        f"shape: d_in {D_IN}, d_sae {D_SAE}, batch {BATCH}, fp32, 1 rank, 1 thread, cpu, "
        f"{ROWS} rows of an .npy file, {args.steps} steps (second half timed)"
    )
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, median in medians.items():
        print(f"{name:24s}: median {median:6.2f} steps/s over {args.repeats} repeats")
    ratio = medians["working tree"] / medians[args.baseline_ref]
    print(f"ratio working tree / {args.baseline_ref}: {ratio:.2f}x")
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}")


if __name__ == "__main__":
    main()
