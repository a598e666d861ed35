"""Measures a real CPU training step's peak memory, in a process of its own.

The profiler's live-bytes curve proved sensitive to what else the process had done before
(another test module's tensors and threads shifted the DDP case by a parameter-sized buffer),
so the accuracy tests measure in one clean spawned worker instead of the pytest process.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function

from gpudeck.trainer.sae import build_model, wrap_ddp
from gpudeck.trainer.sae_config import SaeConfig
from gpudeck.trainer.sae_model import train_step

CPU = torch.device("cpu")


def _init_world_of_one() -> None:
    """DDP needs a process group; the trainer wraps even a single rank."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def clean_measurer() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_init_world_of_one)


def measure(config_json: dict[str, Any], ddp: bool) -> int:
    return measured_step_peak(SaeConfig.model_validate(config_json), ddp=ddp)


def measured_step_peak(config: SaeConfig, *, ddp: bool) -> int:
    """Live bytes at the peak of the 2nd real step, as the trainer builds and runs it."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model = build_model(config, CPU)
        module = wrap_ddp(model, config, CPU) if ddp else model
        optimizer = torch.optim.Adam(
            model.parameters(), lr=config.lr, betas=(config.adam_beta1, config.adam_beta2)
        )
        batch = torch.randn(config.batch_size, config.d_in).to(model.W_enc.dtype)
        for step in (1, 2):
            with record_function(f"step_{step}"):
                output = train_step(
                    module,
                    optimizer,
                    batch,
                    l1_coefficient=config.l1_coefficient,
                    grad_clip_norm=config.grad_clip_norm,
                )
                del output
        del module, model, optimizer, batch
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
