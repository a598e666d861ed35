"""A job kind for the launcher tests: each rank records what it was started with, then waits
(stopping when asked) for `sleep_s`."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.engine.kinds import JobKind

RECORDED = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "OMP_NUM_THREADS",
)


class EnvDumpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sleep_s: float = Field(default=0.0, ge=0, le=600)


def train(ctx: Any, config: EnvDumpConfig) -> None:
    import torch
    import torch.distributed as dist

    record = {name: os.environ.get(name) for name in RECORDED}
    record.update(
        pgid=os.getpgrp(),
        pid=os.getpid(),
        threads=torch.get_num_threads(),
        cuda_initialized=torch.cuda.is_initialized(),
        backend=dist.get_backend(),
    )
    (ctx.run_dir / f"env_rank{ctx.rank}.json").write_text(json.dumps(record))
    print(f"rank {ctx.rank} says hello", flush=True)
    deadline = time.monotonic() + config.sleep_s
    while time.monotonic() < deadline and not ctx.should_stop():
        time.sleep(0.05)


KIND = JobKind(
    name="envdump",
    description="launcher test kind",
    config_model=EnvDumpConfig,
    train="launch_kinds:train",
)
