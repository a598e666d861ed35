"""Section 2: the SAE memory estimate (kinds/sae/memory.estimate_sae) against a real training
step on the GPU: its step peak against `torch.cuda.max_memory_allocated`, and its whole
per-device figure (the step plus the CUDA context and NCCL reserve) against what nvidia-smi
says this process uses. Every architecture, fp32 and bf16, the CPU accuracy test's shapes and
the 302 M-parameter one. The step is measured as tests/kinds/sae/test_memory_accuracy.py does
on the device: the bare model, as the trainer steps a world of one (two_ranks.py measures
DDP, its first bucket held through step 2: the worst timing, which the estimate must cover).
This process holds an NCCL communicator (measured first, below), so its nvidia-smi figure
still matches the estimate's NCCL term; a one-rank job no longer creates one (docs/memory.md).

Dry run: the CPU step, measured by the profiler (tests/kinds/sae/memory_measure.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.distributed as dist

from gpucheck import two_ranks
from gpucheck.rows import Check, Row
from gpudeck.engine.contract import CUDA_ALLOC_CONF
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.memory import (
    CUBLAS_HANDLES,
    CUBLAS_WORKSPACE_BYTES,
    CUDA_CONTEXT_BYTES,
    NCCL_BYTES,
    estimate_sae,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "backend" / "tests" / "kinds" / "sae"))
from memory_measure import cuda_step_peak, measure

GIB, MIB = 1024**3, 1024**2
TOLERANCE = 0.05
SHAPES = [(256, 2048, 64), (512, 4096, 4096), (768, 8192, 1024), (2304, 65536, 4096)]
ARCHITECTURES = ("standard", "topk", "batchtopk", "jumprelu")


def cases(check: Check) -> list[SaeConfig]:
    if check.dry_run:  # CPU: bf16 sparse TopK has no CPU kernel (issue 26); one bf16 case
        shapes, dtypes = [(64, 256, 32)], ("float32",)
    else:
        shapes, dtypes = SHAPES, ("float32", "bfloat16")
    found = [
        SaeConfig(architecture=a, d_in=d, d_sae=s, batch_size=b, dtype=t)  # type: ignore[arg-type]
        for d, s, b in shapes
        for t in dtypes
        for a in ARCHITECTURES
    ]
    if check.dry_run:
        found.append(SaeConfig(d_in=64, d_sae=256, batch_size=32, dtype="bfloat16"))
    return found


def run(check: Check) -> Iterator[Row]:
    if not check.dry_run:
        yield from _framework_memory()
    for config in cases(check):
        c = config
        name = f"{c.architecture} {c.d_in}x{c.d_sae} batch {c.batch_size} {c.dtype}"
        try:
            yield _measure_case(check, config, name)
        except torch.OutOfMemoryError as exc:
            yield Row(name, f"out of memory: {str(exc)[:120]}", "fits", "FAIL")
        except NotImplementedError as exc:  # a kernel missing for this dtype/device
            yield Row(name, f"NotImplementedError: {str(exc)[:160]}", "trains", "FAIL")
    yield from two_ranks.rows(check)


def _framework_memory() -> Iterator[Row]:
    # The allocator as the worker configures ranks (before CUDA's first allocation here).
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = CUDA_ALLOC_CONF
    """What the estimate's reserve stands for, measured: the CUDA context (nvidia-smi, nothing
    allocated), NCCL's communicator of a world of one (after its first all-reduce), and the
    allocator memory cuBLAS keeps for its workspaces (a forward and a backward matmul, which
    autograd runs on a thread of its own, with a handle and workspace of its own)."""
    torch.cuda.set_device(0)
    one = torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    context = _smi_process_bytes(os.getpid()) or 0
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    dist.all_reduce(one)
    torch.cuda.synchronize()
    nccl = (_smi_process_bytes(os.getpid()) or 0) - context
    a = torch.randn(512, 512, device="cuda", requires_grad=True)
    before = torch.cuda.memory_allocated()
    (a @ a).sum().backward()
    torch.cuda.synchronize()
    workspace = torch.cuda.memory_allocated() - before - a.numel() * 4  # less a.grad
    del a, one
    command = "nvidia-smi --query-compute-apps=pid,used_memory; torch.cuda.memory_allocated"
    for name, size in (("CUDA context", context), ("NCCL, world of one", nccl),
                       ("cuBLAS workspaces (allocator)", workspace)):  # fmt: skip
        goal = (
            f"the estimate's terms: context {CUDA_CONTEXT_BYTES // MIB} MiB, NCCL "
            f"{NCCL_BYTES // MIB} MiB, cuBLAS {CUBLAS_HANDLES * CUBLAS_WORKSPACE_BYTES // MIB} MiB"
        )
        yield Row(name, f"{size / 1024**2:.0f} MiB", goal, "info", command, {"bytes": size})


def _measure_case(check: Check, config: SaeConfig, name: str) -> Row:
    estimate = estimate_sae(config, 1, device_type=check.device_type)
    if check.dry_run:
        allocated, process = measure(config.model_dump(mode="json"), False), None  # no DDP
    else:
        allocated, process = _cuda_step(config)
    step_error = estimate.peak_step_bytes / allocated - 1
    figure = (
        f"step: estimate {estimate.peak_step_bytes / GIB:.3f} GiB, allocator peak "
        f"{allocated / GIB:.3f} GiB ({step_error:+.1%})"
    )
    ok = abs(step_error) <= TOLERANCE
    data: dict[str, object] = {
        "estimate_step": estimate.peak_step_bytes,
        "allocated": allocated,
        "components": estimate.bytes_by_component(),
    }
    if process is not None:
        device_error = estimate.bytes_per_device / process - 1
        figure += (
            f"; per device: estimate {estimate.bytes_per_device / GIB:.3f} GiB, nvidia-smi "
            f"{process / GIB:.3f} GiB ({device_error:+.1%})"
        )
        ok = ok and abs(device_error) <= TOLERANCE
        data |= {"estimate_device": estimate.bytes_per_device, "nvidia_smi": process}
    command = "gpudeck.kinds.sae.memory.estimate_sae vs torch.cuda.max_memory_allocated"
    return Row.judged(name, figure, "within 5 %", ok, command, **data)


def _cuda_step(
    config: SaeConfig, index: int = 0, batch_size: int = 0, *, ddp: bool = False
) -> tuple[int, int | None]:
    """The allocator's peak over 3 steps on device `index` (of a batch of `batch_size` rows,
    default the config's), and nvidia-smi's memory for this process after them. The bare
    model, as the trainer steps one rank; `ddp`: a rank of a larger world."""
    return cuda_step_peak(  # type: ignore[no-any-return]
        config,
        torch.device("cuda", index),
        batch_size,
        while_held=lambda: _smi_process_bytes(os.getpid()),
        ddp=ddp,
    )


def _smi_process_bytes(pid: int) -> int | None:
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout  # fmt: skip
    for line in out.splitlines():
        found, used = (c.strip() for c in line.split(","))
        if int(found) == pid:
            return int(float(used)) * 1024**2
    return None
