"""Run a function in a few new processes, one per rank of a process group (the tests' own
DDP worlds, beside the trainer's ranks that rankrunner starts)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch.multiprocessing as torch_mp

from gpudeck.engine.launch import free_port

RANKS_TIMEOUT_S = 120


def run_in_processes(fn: Callable[..., None], backend: str, world: int, out_dir: Path) -> None:
    """fn(rank, backend, world, port, out_dir) in `world` new processes; a rank that
    raises fails the test with its traceback, one that hangs (a collective) after a timeout.
    `fn` must live in a module the forkserver imports by its top-level name (conftest.py)."""
    args = (backend, world, free_port(), str(out_dir))
    context = torch_mp.start_processes(
        fn, args=args, nprocs=world, join=False, start_method="forkserver"
    )
    deadline = time.monotonic() + RANKS_TIMEOUT_S
    while not context.join(timeout=max(0.0, deadline - time.monotonic())):
        if time.monotonic() >= deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"{backend} ranks did not finish in {RANKS_TIMEOUT_S} s")
