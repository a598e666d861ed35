"""Run N ranks of a job in local processes with torchrun's environment (tests only).

Ranks start from a forkserver that has already imported torch, so each costs a fork, not an
interpreter start. Events go to <run_dir>/events.jsonl.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path
from typing import Any

import torch

from gpudeck.engine import checkpoint
from gpudeck.engine.contract import JobLaunch
from gpudeck.engine.events import decode
from gpudeck.engine.launch import free_port
from gpudeck.engine.rank import run_rank

_CTX = mp.get_context("forkserver")
_CTX.set_forkserver_preload(["torch", "torch.distributed", "gpudeck.engine.rank"])


def _rank_main(
    launch_json: str, rank: int, extra_kinds: list[str], env: dict[str, str] | None = None
) -> None:
    place = JobLaunch.from_json(launch_json).rank(rank)
    os.environ.update(place.environment())
    os.environ.update(env or {})  # server settings a worker would have (its environment)
    if extra_kinds:
        from gpudeck.engine import kinds

        for ref in extra_kinds:
            kind = kinds._resolve(ref)
            kinds.registry()[kind.name] = kind  # type: ignore[attr-defined]
    run_rank(place)


def make_spec(
    tmp: Path,
    config: dict[str, Any],
    *,
    kind: str = "sae",
    job_id: int = 1,
    resume_from: str | None = None,
    data_dir: Path | None = None,
) -> JobLaunch:
    """One job's launch contract; start_ranks fills in its world size and port."""
    data_dir = data_dir or tmp / "data"
    return JobLaunch(
        job_id=job_id,
        kind=kind,
        config=config,
        run_dir=str(tmp / "run"),
        data_dir=str(data_dir),
        checkpoint_dir=str(data_dir / "checkpoints" / str(job_id)),
        device_type="cpu",
        device_indices=(),
        resume_from=resume_from,
        num_threads=1,
        keep_checkpoints=3,
    )


def start_ranks(
    spec: JobLaunch,
    world: int,
    extra_kinds: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> list[Any]:
    launch = spec.replace(device_indices=tuple(range(world)), master_port=free_port())
    procs = [
        _CTX.Process(target=_rank_main, args=(launch.to_json(), r, extra_kinds or [], env))
        for r in range(world)
    ]
    for proc in procs:
        proc.start()
    return procs


def run_ranks(
    spec: JobLaunch,
    world: int,
    extra_kinds: list[str] | None = None,
    timeout_s: float = 240,
    env: dict[str, str] | None = None,
) -> list[int]:
    """Run the job to completion; returns each rank's exit code."""
    procs = start_ranks(spec, world, extra_kinds, env)
    for proc in procs:
        proc.join(timeout_s)
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join()
    return [proc.exitcode for proc in procs]


def read_events(spec: JobLaunch, event_type: str | None = None) -> list[dict[str, Any]]:
    path = Path(spec.run_dir) / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    events = [{**json.loads(line), "data": decode(json.loads(line)).data} for line in lines]
    return [e for e in events if event_type is None or e["type"] == event_type]


def tiny_config(**overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "d_in": 16,
        "d_sae": 64,
        "batch_size": 64,
        "steps": 50,
        "lr": 1e-3,
        "architecture": "standard",
        "l1_coefficient": 1e-3,
        # Warm-ups shorter than any tiny run, and no decay: a run cut short (the resume test's
        # first half) then schedules its steps exactly as the full run does.
        "lr_warm_up_steps": 10,
        "lr_decay_steps": 0,
        "l1_warm_up_steps": 10,
        "metrics_interval": 25,
        "checkpoint_interval": 1000,
        "seed": 3,
        "dataset": {
            "type": "synthetic",
            "num_features": 64,
            "active_features": 3,
            "num_samples": 100_000,
        },
    }
    config.update(overrides)
    return config


def write_checkpoints_forever(root: str) -> None:
    """Checkpoint in a loop until killed (the SIGKILL test runs this in a child)."""
    step = int(time.time() * 1000) % 10**9  # increasing across restarts
    while True:
        step += 1
        checkpoint.write_checkpoint(
            root,
            step,
            tensor_files={
                "w.safetensors": {"w": torch.full((256, 256), float(step))},
                "s.safetensors": {"s": torch.zeros(1000)},
            },
            json_files={"step.json": {"step": step}},
            keep=2,
        )
