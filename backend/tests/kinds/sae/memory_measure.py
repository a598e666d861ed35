"""Measures a real CPU training step's peak memory, in a process of its own.

The profiler's live-bytes curve proved sensitive to what else the process had done before
(another test module's tensors and threads shifted the DDP case by a parameter-sized buffer),
so the accuracy tests measure in one clean spawned worker instead of the pytest process.

DDP is measured at its worst timing, which the estimate must cover. Its first iteration reduces
every gradient in one flat bucket; the second step's forward rebuilds the buckets, and the old
one is freed only when the process group drops its last all-reduce work, which gloo's worker
thread does whenever it is next scheduled: at once on an idle machine, after the whole step on
a loaded one (1 run in 9 of this test set saw it, +1 parameter copy). The measurement holds the
old bucket through step 2, as the slowest such thread does, so it compares against the highest
peak the real step can reach, deterministically.

The profiler records allocations and frees only on threads it profiles, not on gloo's worker
thread. A buffer whose last reference that thread drops is never seen freed; the start-up
broadcast's flat copy of the weights was such a buffer, so the measured world of one skips it.
"""

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function

from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.memory import trace_spec
from gpudeck.kinds.sae.memory_trace import worst_dead_mask
from gpudeck.kinds.sae.model import train_step
from gpudeck.kinds.sae.train import build_model, wrap_ddp

CPU = torch.device("cpu")


def _init_world_of_one() -> None:
    """DDP needs a process group: a rank of a larger world is measured as DDP over a world of
    one (its buckets and copies are the same per rank whatever the world size)."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def clean_measurer() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_init_world_of_one)


def measure(config_json: dict[str, Any], ddp: bool, warm_up: bool = False) -> int:
    return measured_step_peak(SaeConfig.model_validate(config_json), ddp=ddp, warm_up=warm_up)


def allreduce_and_hold(
    held: list[torch.Tensor], bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP's default all-reduce, keeping the bucket as a process group's unreleased work would.

    The Reducer then copies gradients into buckets without dividing (the hook divides in place
    instead): the same buffers, so the same allocations, as without a hook. (This module has
    no `from __future__ import annotations`: DDP compares the hook's annotations to the types.)
    """
    held.append(bucket.buffer())
    return allreduce_hook(None, bucket)  # type: ignore[arg-type]


def measured_step_peak(config: SaeConfig, *, ddp: bool, warm_up: bool = False) -> int:
    """Live bytes at the peak of the 2nd real step, as the trainer builds and runs it;
    `warm_up`: a step of the TopK warm-up (batchtopk, jumprelu)."""
    held: list[torch.Tensor] = []
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model = build_model(config, CPU)
        model.topk_warm_up = warm_up
        # No start-up broadcast: its flat copy of the weights is released by gloo's worker
        # thread when that thread drops the work last, and the profiler does not see frees on
        # that thread, so the copy would count as live for the rest of the run (about 1 run
        # in 2 under pytest). A world of one has nothing to broadcast.
        module = wrap_ddp(model, config, CPU, init_sync=False) if ddp else model
        if isinstance(module, DistributedDataParallel):
            module.register_comm_hook(held, allreduce_and_hold)
        optimizer = torch.optim.Adam(
            model.parameters(), lr=config.lr, betas=(config.adam_beta1, config.adam_beta2)
        )
        batch = torch.randn(config.batch_size, config.d_in).to(model.W_enc.dtype)
        dead_mask = worst_dead_mask(trace_spec(config, config.batch_size, "cpu"))
        for step in (1, 2):
            with record_function(f"step_{step}"):
                output = train_step(
                    module,
                    optimizer,
                    batch,
                    coefficient=config.sparsity_coefficient,
                    dead_mask=dead_mask,
                    grad_clip_norm=config.grad_clip_norm_value,
                )
                del output
                if step == 1:  # the buckets of step 1 stay held; those of step 2 are the live ones
                    first_iteration_buckets, held[:] = list(held), []
        del module, model, optimizer, batch, first_iteration_buckets
    return _peak_in_window(prof, "step_2")


def _peak_in_window(prof: profile, window: str) -> int:
    events = list(prof.profiler.kineto_results.events())  # type: ignore[union-attr]
    (marker,) = [e for e in events if e.name() == window]
    start, end = marker.start_ns(), marker.start_ns() + marker.duration_ns()
    memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
    live, peak = 0, 0
    for event in memory:
        if event.start_ns() > end:
            break
        if event.start_ns() >= start:
            peak = max(peak, live)  # the level the step started from counts too
        live += event.nbytes()
        if event.start_ns() >= start:
            peak = max(peak, live)
    return peak


def cuda_step_peak(
    config: SaeConfig,
    device: torch.device,
    rows: int = 0,
    while_held: Any = None,
    *,
    ddp: bool = False,
) -> tuple[int, Any]:
    """On a GPU: the allocator's peak over steps 1-3 of a batch of `rows` (default the
    config's), and what `while_held()` returns while the run's memory is still held
    (nvidia-smi's view of the process, say). The bare model, as the trainer steps a world of
    one; `ddp`: DDP on the process group already initialised, step 1's bucket held through
    step 2 (the worst timing), as a rank of a larger world. Used by the gpu test and
    `make gpu-check`."""
    torch.cuda.empty_cache()
    model = build_model(config, device)
    held: list[torch.Tensor] = []
    module: torch.nn.Module = model
    if ddp:
        module = wrap_ddp(model, config, device)
        module.register_comm_hook(held, allreduce_and_hold)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    rows = rows or config.batch_size
    batch = torch.randn(rows, config.d_in, device=device).to(model.W_enc.dtype)
    dead = worst_dead_mask(trace_spec(config, rows, "cuda"))
    peaks = []
    for step in (1, 2, 3):
        torch.cuda.reset_peak_memory_stats(device)
        output = train_step(
            module,
            optimizer,
            batch,
            coefficient=config.sparsity_coefficient,
            dead_mask=None if dead is None else dead.to(device),
        )
        del output
        if step == 2:
            held.clear()
        torch.cuda.synchronize(device)
        peaks.append(torch.cuda.max_memory_allocated(device))
    seen = while_held() if while_held is not None else None
    del module, model, optimizer, batch, held
    torch.cuda.empty_cache()
    return max(peaks), seen
