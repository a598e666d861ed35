"""A two-rank SAE step with the defaults (the frequency rule on: dead_min_frequency empty)
against the same step with dead_min_frequency 0 (issue 33, goal: within 5 %).

    cd backend && ../.venv/bin/python ../bench/sae_dead_rule_step.py [--steps 400]

Two spawned rank processes in a gloo process group (one thread each, as the worker starts
them on simulated devices); each builds the trainer's own run (`train._setup`: DDP, the data
loader, the dead-latent state) for both configs, the SAE defaults (TopK k 5, d_in 64, d_sae
512, batch 512, synthetic data), and steps them in turn, step by step, the way the trainer's
loop does (`train._one_step` and the stop check), so that the machine's load hits both
alike. Figures: rank 0's median step time per config, after a warm-up of 20 steps each.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from gpudeck.engine.context import JsonlSink, TrainContext
from gpudeck.engine.launch import free_port
from gpudeck.kinds.sae import train
from gpudeck.kinds.sae.config import SaeConfig

CONFIGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "dead_min_frequency 0": {"dead_min_frequency": 0.0},
}
WARM_UP_STEPS = 20
WORLD = 2


def _context(rank: int, run_dir: Path, config: dict[str, Any]) -> TrainContext:
    return TrainContext(
        rank=rank,
        world_size=WORLD,
        local_rank=rank,
        device=torch.device("cpu"),
        job_id=1,
        kind="sae",
        config=config,
        checkpoint_dir=run_dir / "ckpt",
        resume_from=None,
        data_dir=run_dir,
        run_dir=run_dir,
        sink=JsonlSink(run_dir / f"events{rank}.jsonl"),
    )


def _rank(rank: int, port: int, run_dir: str, steps: int, both: dict[str, Any]) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    configs = {
        name: SaeConfig.model_validate({"steps": 10**6, **both, **over})
        for name, over in CONFIGS.items()
    }
    ctx = _context(rank, Path(run_dir), {})
    runs = {name: train._setup(ctx, config) for name, config in configs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(WARM_UP_STEPS + steps):
        for name, run in runs.items():
            start = time.perf_counter()
            train._one_step(run, ctx.device)
            ctx.should_stop()  # the loop's stop check: a collective on the CPU
            times[name].append(time.perf_counter() - start)
    if rank == 0:
        medians = {name: statistics.median(t[WARM_UP_STEPS:]) for name, t in times.items()}
        (Path(run_dir) / "medians.json").write_text(json.dumps(medians))
    del runs  # the DDP reducers before the process group (pytorch issue #56297)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=JSON", help="for both configs"
    )
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as run_dir:
        both = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
        ctx, port = mp.get_context("spawn"), free_port()
        procs = [
            ctx.Process(target=_rank, args=(r, port, run_dir, args.steps, both))
            for r in range(WORLD)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        assert all(proc.exitcode == 0 for proc in procs), "a rank failed"
        medians = json.loads((Path(run_dir) / "medians.json").read_text())
    on, off = (medians[name] for name in CONFIGS)
    print(f"2 gloo ranks, SAE defaults {args.set}, median of {args.steps} interleaved steps:")
    print(f"  defaults (frequency rule on) : {on * 1e3:7.3f} ms")
    print(f"  dead_min_frequency 0         : {off * 1e3:7.3f} ms  (defaults {on / off:.3f}x)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
