"""A second, tiny job kind (linear regression) proving kinds plug into the same rank runtime."""

from __future__ import annotations

import torch
from pydantic import BaseModel
from torch.nn.parallel import DistributedDataParallel

from gpudeck.engine.context import TrainContext
from gpudeck.engine.kinds import JobKind


class LinRegConfig(BaseModel):
    d_in: int = 4
    batch_size: int = 32
    steps: int = 200
    lr: float = 0.05
    seed: int = 0


def train(ctx: TrainContext, config: LinRegConfig) -> None:
    gen = torch.Generator().manual_seed(config.seed)
    true_w = torch.randn(config.d_in, 1, generator=gen)
    model = torch.nn.Linear(config.d_in, 1, bias=False)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    local = config.batch_size // ctx.world_size
    step = 0
    while step < config.steps and not ctx.should_stop():
        x = torch.randn(config.batch_size, config.d_in, generator=gen)[ctx.rank * local :][:local]
        loss = (ddp(x) - x @ true_w).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
    ctx.report(step, {"loss": float(loss), "world_size": float(ctx.world_size)})
    ctx.log(f"rank {ctx.rank} of {ctx.world_size} on {ctx.device}")
    ctx.save_checkpoint(
        step,
        tensor_files={"model.safetensors": {"weight": model.weight.detach()}},
        json_files={"about.json": {"kind": "linreg"}},
    )
    del ddp


def fail(ctx: TrainContext, config: LinRegConfig) -> None:
    if ctx.rank == 1:
        raise RuntimeError("boom on purpose")
    ctx.should_stop()  # rank 0 waits in a collective until its peer is gone, then errors too


LINREG_KIND = JobKind(
    name="linreg",
    description="least squares on seeded data (tests only)",
    config_model=LinRegConfig,
    train="linreg_kind:train",
)
FAILING_KIND = JobKind(
    name="failing",
    description="raises on rank 1 (tests only)",
    config_model=LinRegConfig,
    train="linreg_kind:fail",
)
