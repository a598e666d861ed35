"""The held-out pass at a checkpoint against the time between checkpoints (issue 33).

    cd backend && ../.venv/bin/python ../bench/sae_heldout_share.py [--steps 40] [--world 2]

For each shape (d_in, d_sae) and global batch: the real trainer on --world spawned rank
processes (one thread each, TopK defaults, synthetic data) for --steps steps; the step time
is the median of rank 0's reports after the first (metrics every 10 steps), the held-out pass
is the `heldout_eval_s` of its last checkpoint. The share is that pass over 500 steps (the
default checkpoint interval) at that step time. Then, in this process on the same shape (one
thread, fresh weights, 16,384 rows), the pass as it was on one rank (chunks of a quarter of
the batch, dense decode) against today's on one rank (`heldout.chunk_rows`), interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from trainer_throughput import run_trainer

from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.heldout import HELDOUT_ROWS, chunk_rows, evaluate
from gpudeck.kinds.sae.model import Sae
from gpudeck.kinds.sae.train import build_model

CHECKPOINT_INTERVAL = SaeConfig().checkpoint_interval  # the default, 500
CASES = [((64, 512), 32), ((64, 512), 4096), ((512, 4096), 32), ((512, 4096), 4096)]


def _reports(checkpoint: Path) -> list[dict[str, float]]:
    run_dir = checkpoint.parents[1]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return [json.loads(e["data"])["metrics"] for e in events if e["type"] == "metrics"]


def trainer_figures(
    data_dir: Path, shape: tuple[int, int], batch: int, steps: int, world: int
) -> dict[str, float]:
    config: dict[str, Any] = {
        "d_in": shape[0],
        "d_sae": shape[1],
        "batch_size": batch,
        "steps": steps,
        "metrics_interval": 10,
        "checkpoint_interval": 10**8,  # one checkpoint, the last: its report has the pass
    }
    checkpoint, _ = run_trainer(data_dir, config, world)
    reports = _reports(checkpoint)
    step_s = statistics.median(r["step_time_s"] for r in reports[1:])
    return {"step_s": step_s, "heldout_s": reports[-1]["heldout_eval_s"]}


@torch.no_grad()
def _old_pass(model: Sae, rows: torch.Tensor, chunk: int) -> float:
    """The pass before issue 33 (heldout.Score.add then): dense decode, a sync per chunk."""
    counts = torch.zeros(model.d_sae, dtype=torch.float64)
    sq_err = 0.0
    for start in range(0, len(rows), chunk):
        x = rows[start : start + chunk]
        acts = model.encode(x)
        counts += (acts != 0).sum(dim=0, dtype=torch.float64)
        x_hat = model.decode(acts).double()
        x64 = x.double()
        sq_err += float((x_hat - x64).pow(2).sum())
        x64.sum(dim=0), x64.pow(2).sum(dim=0)
    return sq_err


def in_process(shape: tuple[int, int], batch: int, rounds: int) -> dict[str, float]:
    """Median seconds of the old pass and today's, interleaved, on one thread."""
    torch.set_num_threads(1)
    model = build_model(SaeConfig(d_in=shape[0], d_sae=shape[1]), torch.device("cpu")).eval()
    rows = torch.randn(HELDOUT_ROWS, shape[0], generator=torch.Generator().manual_seed(0)).relu()
    chunk = chunk_rows(model, batch, step=CHECKPOINT_INTERVAL, ddp=False)
    old_chunk = max(1, batch // 4)
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(rounds):
        start = time.perf_counter()
        _old_pass(model, rows, old_chunk)
        times["old"].append(time.perf_counter() - start)
        start = time.perf_counter()
        evaluate(model, rows, scale=1.0, chunk=chunk, device=torch.device("cpu"))
        times["new"].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()} | {
        "chunk": chunk,
        "old_chunk": old_chunk,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3, help="in-process repetitions")
    parser.add_argument("--world", type=int, default=1, help="trainer ranks")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}; trainer on {args.world} rank(s)")
    print(
        f"{'d_in x d_sae':>13} {'batch':>6} {'step':>9} {'interval':>9} {'held-out':>9} "
        f"{'share':>6} | {'old pass':>9} {'chunk':>5} {'new pass':>9} {'chunk':>5} {'ratio':>6}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for shape, batch in CASES:
            got = trainer_figures(Path(tmp), shape, batch, args.steps, args.world)
            interval = CHECKPOINT_INTERVAL * got["step_s"]
            pass_s = in_process(shape, batch, args.rounds)
            print(
                f"{shape[0]:>6} x {shape[1]:<5} {batch:>6} {got['step_s'] * 1e3:>7.1f}ms "
                f"{interval:>8.1f}s {got['heldout_s']:>8.2f}s "
                f"{100 * got['heldout_s'] / interval:>5.1f}% | {pass_s['old']:>8.2f}s "
                f"{pass_s['old_chunk']:>5.0f} {pass_s['new']:>8.2f}s {pass_s['chunk']:>5.0f} "
                f"{pass_s['new'] / pass_s['old']:>5.2f}x"
            )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
