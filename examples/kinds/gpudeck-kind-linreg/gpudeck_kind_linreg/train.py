"""The rank side: `train(ctx, config)` runs in every rank with torchrun's environment.

Checkpoints are this kind's own two files (the engine writes whatever names a kind passes):
`linreg.safetensors` (the weight and the data generator's state) and `linreg.json` (the step).
A job resumed from one continues the same run: same weights, same next batch.
"""

from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel

from gpudeck.engine.checkpoint import open_checkpoint
from gpudeck.engine.context import TrainContext
from gpudeck_kind_linreg import LinRegConfig

TENSORS_FILE = "linreg.safetensors"
STATE_FILE = "linreg.json"


def _save(ctx: TrainContext, step: int, model: torch.nn.Linear, gen: torch.Generator) -> None:
    # Every rank holds the same weight (DDP) and generator (each draws the global batch), so
    # rank 0's copy is the job's; the other ranks' call returns at once.
    tensors = {"weight": model.weight.detach().cpu(), "generator": gen.get_state()}
    ctx.save_checkpoint(
        step,
        tensor_files={TENSORS_FILE: tensors},
        json_files={STATE_FILE: {"step": step, "d_in": model.in_features}},
    )


@torch.no_grad()
def _resume(ctx: TrainContext, model: torch.nn.Linear, gen: torch.Generator) -> int:
    """Load the checkpoint the job resumes from, if any; returns the step it reached."""
    if ctx.resume_from is None:
        return 0
    ckpt = open_checkpoint(ctx.resume_from)
    tensors = ckpt.read_tensors(TENSORS_FILE)
    model.weight.copy_(tensors["weight"].to(ctx.device))
    gen.set_state(tensors["generator"])
    step = int(ckpt.read_json(STATE_FILE)["step"])
    if ctx.is_main:
        ctx.log(f"resumed from {ctx.resume_from} at step {step}")
    return step


def train(ctx: TrainContext, config: LinRegConfig) -> None:
    gen = torch.Generator().manual_seed(config.seed)
    true_w = torch.randn(config.d_in, 1, generator=gen)
    model = torch.nn.Linear(config.d_in, 1, bias=False).to(ctx.device)
    torch.nn.init.zeros_(model.weight)
    step = saved = _resume(ctx, model, gen)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    local = config.batch_size // ctx.world_size
    stopped = False
    while step < config.steps:
        if ctx.should_stop():  # a collective: every rank asks at the same step
            stopped = True
            break
        step += 1
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
        if config.checkpoint_interval and step % config.checkpoint_interval == 0:
            _save(ctx, step, model, gen)
            saved = step
    # Cancelled or preempted: a final checkpoint, so a resumed job loses no step.
    if (config.checkpoint_at_end or stopped) and step != saved:
        _save(ctx, step, model, gen)
    del ddp
