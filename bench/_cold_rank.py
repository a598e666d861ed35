"""The baseline's rank for bench/job_start.py: a cold process that imports torch, joins the
process group, builds the `sae` job's DDP model and takes its first step.

A module of its own, importing only the standard library at the top: a spawned rank imports
the module its function lives in, and bench/job_start.py's imports (the bench server's
helpers: SQLAlchemy, psycopg, GPUDeck's services; ~1.3 s of CPU) are none of what a cold
start of a plain DDP script pays; when the rank lived there, the baseline paid them. A spawned
rank also re-imports the parent's main module: under bench/gpu_check.py that is light, while
`python bench/job_start.py` still charges its own imports to its baseline.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

CONFIG = {
    "d_in": 64,
    "d_sae": 512,
    "batch_size": 256,
    "steps": 3,
    "metrics_interval": 1,
    "checkpoint_interval": 1000,
    "dataset": {"type": "synthetic", "num_features": 128, "num_samples": 100_000},
}


def baseline_rank(rank: int, port: int, out: str, ranks: int, backend: str) -> None:
    import torch
    import torch.distributed as dist

    from gpudeck.kinds.sae.config import SaeConfig
    from gpudeck.kinds.sae.model import train_step
    from gpudeck.kinds.sae.train import build_model, wrap_ddp

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // ranks))
    device = torch.device("cpu")
    if backend == "nccl":  # one GPU per rank, as GPUDeck's ranks have
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    dist.init_process_group(backend, rank=rank, world_size=ranks)
    config = SaeConfig.model_validate(CONFIG)
    ddp = wrap_ddp(build_model(config, device), config, device)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=config.lr)
    batch = torch.randn(config.batch_size // ranks, config.d_in, device=device)
    train_step(ddp, optimizer, batch, coefficient=config.sparsity_coefficient)
    if device.type == "cuda":
        torch.cuda.synchronize()  # the step is taken when the GPU has run it
    if rank == 0:
        Path(out).write_text(f"{time.time():.6f}")
    # Tear down in step: neither rank may leave while the other still uses the group (rank 0
    # hosts the store), and the DDP reducer must be gone before the group is destroyed, or a
    # rank can abort at exit ("terminate called without an active exception").
    dist.barrier()
    del ddp, optimizer
    gc.collect()
    dist.destroy_process_group()
