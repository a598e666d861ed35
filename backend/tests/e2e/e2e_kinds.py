"""A tiny job kind for fault tests, loaded by workers through GPUDECK_KIND_MODULES.

Every step is a real DDP backward over gloo; rank `fail_rank` raises at step `fail_at_step`.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.engine.kinds import JobKind


class FaultyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: int = Field(default=20, ge=1, le=100_000)
    fail_at_step: int | None = Field(default=None, ge=1)
    fail_rank: int = Field(default=0, ge=0)
    step_sleep_s: float = Field(default=0.0, ge=0, le=10)


def train(ctx: Any, config: FaultyConfig) -> None:
    import torch
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        for step in range(1, config.steps + 1):
            if ctx.should_stop():
                break
            loss = model(torch.randn(8, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step == config.fail_at_step and ctx.rank == config.fail_rank:
                raise RuntimeError(f"injected failure at step {step}")
            ctx.report(step, {"loss": float(loss)})
            ctx.progress(step, config.steps)
            time.sleep(config.step_sleep_s)
    finally:
        del model


KIND = JobKind(
    name="faulty",
    description="test kind: a tiny DDP model that can raise at a chosen step",
    config_model=FaultyConfig,
    train="e2e_kinds:train",
)
