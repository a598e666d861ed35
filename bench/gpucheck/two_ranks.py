"""Section 2's two-rank cases: the estimate for one of two DDP ranks (NCCL, one GPU each, half
the batch each) against what each rank's allocator and nvidia-smi saw."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp

from gpucheck.rows import Check, Row
from gpudeck.engine.contract import CUDA_ALLOC_CONF
from gpudeck.engine.launch import free_port
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.memory import estimate_sae

GIB = 1024**3
TOLERANCE = 0.05
CASES = [
    SaeConfig(architecture=a, d_in=d, d_sae=s, batch_size=b)  # type: ignore[arg-type]
    for d, s, b in ((768, 8192, 1024), (2304, 65536, 4096))
    for a in ("standard", "topk")
]


def rows(check: Check) -> Iterator[Row]:
    if check.dry_run:
        yield Row.skipped("world size 2", "dry run: the CPU has no allocator peak to compare")
        return
    if check.gpus < 2:
        yield Row.skipped("world size 2", f"{check.gpus} GPU here: needs 2")
        return
    for c in CASES:
        name = f"{c.architecture} {c.d_in}x{c.d_sae} batch {c.batch_size}, 2 ranks"
        try:
            yield _row(name, c, _measure(c))
        except Exception as exc:  # a rank that raised (out of memory, a kernel): this row's
            yield Row(name, f"{type(exc).__name__}: {str(exc)[-200:]}", "trains", "FAIL")


def _row(name: str, config: SaeConfig, measured: list[dict[str, int]]) -> Row:
    estimate = estimate_sae(config, 2, device_type="cuda")
    allocated = max(m["allocated"] for m in measured)
    process = max(m["process"] for m in measured)
    step_error = estimate.peak_step_bytes / allocated - 1
    device_error = estimate.bytes_per_device / process - 1
    figure = (
        f"step: estimate {estimate.peak_step_bytes / GIB:.3f} GiB, allocator peak (worse rank) "
        f"{allocated / GIB:.3f} GiB ({step_error:+.1%}); per device: estimate "
        f"{estimate.bytes_per_device / GIB:.3f} GiB, nvidia-smi {process / GIB:.3f} GiB "
        f"({device_error:+.1%})"
    )
    ok = abs(step_error) <= TOLERANCE and abs(device_error) <= TOLERANCE
    command = "estimate_sae(config, 2) vs 2 NCCL ranks' max_memory_allocated and nvidia-smi"
    return Row.judged(name, figure, "within 5 %", ok, command, ranks=measured)


def _measure(config: SaeConfig) -> list[dict[str, int]]:
    out = Path(tempfile.mkdtemp(prefix="gpudeck-estimate-ranks-"))
    args = (free_port(), config.model_dump_json(), str(out))
    mp.start_processes(_rank, args=args, nprocs=2, join=True, start_method="spawn")
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def _rank(rank: int, port: int, config_json: str, out: str) -> None:
    from gpucheck.estimate import _cuda_step  # the same measured step as one rank's

    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = CUDA_ALLOC_CONF  # as the worker starts ranks
    config = SaeConfig.model_validate_json(config_json)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    allocated, process = _cuda_step(config, rank, config.batch_size // 2, ddp=True)
    Path(out, f"rank{rank}.json").write_text(
        json.dumps({"allocated": allocated, "process": process or 0})
    )
    dist.barrier()
    dist.destroy_process_group()
