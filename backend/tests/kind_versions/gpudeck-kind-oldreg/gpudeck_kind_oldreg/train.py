"""Version 1's calls, as last week's docs showed them: `ctx.save_checkpoint(step, weights,
cfg_json, state_tensors, state_json)` and `checkpoint.load_checkpoint(path)` with its
`weights`, `cfg`, `state_tensors` and `state`."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from gpudeck.engine import checkpoint
from gpudeck_kind_oldreg import OldRegConfig


def _save(ctx: Any, step: int, model: torch.nn.Linear, gen: torch.Generator) -> None:
    weights = {"weight": model.weight.detach().cpu().contiguous()}
    ctx.save_checkpoint(
        step, weights, {"kind": "oldreg"}, {"generator": gen.get_state()}, {"step": step}
    )


@torch.no_grad()
def _resume(ctx: Any, model: torch.nn.Linear, gen: torch.Generator) -> int:
    if ctx.resume_from is None:
        return 0
    ckpt = checkpoint.load_checkpoint(ctx.resume_from)
    model.weight.copy_(ckpt.weights["weight"].to(ctx.device))
    gen.set_state(ckpt.state_tensors["generator"])
    if ctx.is_main:
        ctx.log(f"resumed from {ctx.resume_from} at step {ckpt.state['step']}")
    return int(ckpt.state["step"])


def train(ctx: Any, config: OldRegConfig) -> None:
    gen = torch.Generator().manual_seed(config.seed)
    true_w = torch.randn(config.d_in, 1, generator=gen)
    model = torch.nn.Linear(config.d_in, 1, bias=False).to(ctx.device)
    torch.nn.init.zeros_(model.weight)
    step = saved = _resume(ctx, model, gen)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    local = config.batch_size // ctx.world_size
    while step < config.steps and not ctx.should_stop():
        step += 1
        x = torch.randn(config.batch_size, config.d_in, generator=gen)
        y = x @ true_w
        mine = slice(ctx.rank * local, (ctx.rank + 1) * local)
        loss = (ddp(x[mine].to(ctx.device)) - y[mine].to(ctx.device)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % config.metrics_interval == 0:
            ctx.report(step, {"loss": float(loss)})
            ctx.progress(step, config.steps)
        if step % config.checkpoint_interval == 0:
            _save(ctx, step, model, gen)
            saved = step
    if step != saved:  # stopped between checkpoints: a final one
        _save(ctx, step, model, gen)
    del ddp
