"""DeadLatents fed the firing counts of a few steps: on each rank of a two-rank gloo world its
share of every batch, or alone the whole batch's. The rank processes come from the forkserver
and import this module by its top-level name (see conftest.py and rank_processes.py)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist

from gpudeck.kinds.sae.metrics import DeadLatents

D_SAE = 48
STEPS = 30
SHARE = 16  # samples per rank and step
WORLD = 2
WINDOW = 4
MIN_FREQUENCY = 0.05
RARE = range(0, 8)  # fire on one sample of a rank now and then: dead by frequency only
SILENT = range(8, 12)  # never fire: dead by the window


def shares(step: int) -> torch.Tensor:
    """float64[WORLD, D_SAE]: on how many of each rank's samples each latent fired."""
    gen = torch.Generator().manual_seed(step)
    active = torch.rand(WORLD, D_SAE, generator=gen) < 0.5
    counts = torch.randint(1, SHARE + 1, (WORLD, D_SAE), generator=gen) * active
    counts[:, RARE] = (torch.rand(WORLD, len(RARE), generator=gen) < 0.2).long()
    counts[:, SILENT] = 0
    return counts.double()


def new_state() -> DeadLatents:
    return DeadLatents(
        D_SAE,
        WINDOW,
        torch.device("cpu"),
        min_frequency=MIN_FREQUENCY,
        global_batch=WORLD * SHARE,
    )


def observe_all(rank: int | None) -> dict[str, torch.Tensor]:
    """Every step's dead mask and the final state; `rank` None: the whole batch, no world."""
    dead = new_state()
    masks = []
    for step in range(STEPS):
        counts = shares(step)
        dead.observe(counts.sum(0) if rank is None else counts[rank])
        mask = dead.mask()
        masks.append(torch.zeros(D_SAE, dtype=torch.bool) if mask is None else mask)
    return {
        "masks": torch.stack(masks),
        "steps_since_fired": dead.steps_since_fired,
        "frequency": dead.frequency,
    }


def rank_main(rank: int, backend: str, world: int, port: int, out_dir: str) -> None:
    """One rank's states, saved as dead-<rank>.pt with the number of all_reduce calls made
    (the real collective runs; the count is taken on the way)."""
    torch.set_num_threads(1)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    real_all_reduce, calls = dist.all_reduce, []

    def counted(tensor: torch.Tensor, *args: object, **kwargs: object) -> object:
        calls.append(tensor.numel())
        return real_all_reduce(tensor, *args, **kwargs)  # type: ignore[arg-type]

    dist.all_reduce = counted  # type: ignore[assignment]
    try:
        state = observe_all(rank)
    finally:
        dist.all_reduce = real_all_reduce
        dist.destroy_process_group()
    state["all_reduce_calls"] = torch.tensor(len(calls))
    torch.save(state, Path(out_dir) / f"dead-{rank}.pt")
