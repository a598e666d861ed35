"""A few SAE training steps, with DDP on each rank of a small world or alone on the full batch.

The ranks are processes forked from the forkserver (torch already imported, see rankrunner),
which import this module by its top-level name (the folder is on sys.path, see conftest.py),
so the test module itself never has to be importable there.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist

from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.model import train_step
from gpudeck.kinds.sae.train import build_model, wrap_ddp

# TopK's local selection with AuxK, and BatchTopK's selection shared by an all-gather in the
# forward, so the process group carries a collective of the model's own besides DDP's.
ARCHITECTURES = ("topk", "batchtopk")
STEPS = 5
BATCH = 64


def config(architecture: str) -> SaeConfig:
    return SaeConfig(
        architecture=architecture,  # type: ignore[arg-type]
        d_in=32,
        d_sae=256,
        k=8,
        batch_size=BATCH,
        lr=1e-3,
        seed=3,
    )


def train(
    cfg: SaeConfig, device: torch.device, *, rank: int = 0, world: int = 1, ddp: bool = False
) -> dict[str, torch.Tensor]:
    """STEPS steps on rank `rank`'s share of the same full batches; the final parameters and
    buffers, on the CPU. Every third latent counts as dead, so AuxK takes part."""
    model = build_model(cfg, device)
    module = wrap_ddp(model, cfg, device) if ddp else model
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    dead = torch.zeros(cfg.d_sae, dtype=torch.bool, device=device)
    dead[::3] = True
    gen = torch.Generator().manual_seed(0)
    share = BATCH // world
    for _ in range(STEPS):
        batch = torch.randn(BATCH, cfg.d_in, generator=gen).relu()
        rows = batch[rank * share : (rank + 1) * share].to(device)
        train_step(module, optimizer, rows, coefficient=cfg.sparsity_coefficient, dead_mask=dead)
    state = {name: t.detach().cpu() for name, t in model.state_dict().items()}
    del module  # DDP's reducer must be gone before the process group (pytorch issue #56297)
    return state


def rank_main(rank: int, backend: str, world: int, port: int, out_dir: str) -> None:
    """One rank: every architecture's steps under DDP, saved as <architecture>-<rank>.pt."""
    torch.set_num_threads(1)  # the ranks share this machine's cores
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        for architecture in ARCHITECTURES:
            state = train(config(architecture), device, rank=rank, world=world, ddp=True)
            torch.save(state, Path(out_dir) / f"{architecture}-{rank}.pt")
    finally:
        dist.destroy_process_group()
