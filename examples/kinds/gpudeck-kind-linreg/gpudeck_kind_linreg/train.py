"""The rank side: `train(ctx, config)` runs in every rank with torchrun's environment."""

from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel

from gpudeck.engine.context import TrainContext
from gpudeck_kind_linreg import LinRegConfig


def train(ctx: TrainContext, config: LinRegConfig) -> None:
    gen = torch.Generator().manual_seed(config.seed)
    true_w = torch.randn(config.d_in, 1, generator=gen)
    model = torch.nn.Linear(config.d_in, 1, bias=False).to(ctx.device)
    torch.nn.init.zeros_(model.weight)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    local = config.batch_size // ctx.world_size
    for step in range(1, config.steps + 1):
        if ctx.should_stop():
            break
        # Every rank draws the same global batch and takes its slice: any world size sees the
        # same data, so N ranks train exactly like one.
        x = torch.randn(config.batch_size, config.d_in, generator=gen)
        y = x @ true_w + config.noise * torch.randn(config.batch_size, 1, generator=gen)
        mine = slice(ctx.rank * local, (ctx.rank + 1) * local)
        loss = (ddp(x[mine].to(ctx.device)) - y[mine].to(ctx.device)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % config.metrics_interval == 0 or step == config.steps:
            error = (model.weight.detach().cpu().T - true_w).norm().item()
            ctx.report(step, {"loss": float(loss), "weight_error": error})
            ctx.progress(step, config.steps)
    if config.checkpoint_at_end:
        weights = {"weight": model.weight.detach().cpu().contiguous()}
        ctx.save_checkpoint(
            step, weights, {"kind": "linreg", "d_in": config.d_in}, {}, {"step": step}
        )
    del ddp
