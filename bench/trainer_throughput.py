"""SAE trainer throughput (activations/s) on CPU: the trainer vs a plain PyTorch loop, 1 vs 2 ranks.

    cd backend && ../.venv/bin/python ../bench/trainer_throughput.py [--steps 8]

Shape: d_in 512, d_sae 4096, global batch 4096, fp32, one thread per rank. Figures are the
second half of the run (the first half warms up). Goals: trainer / plain >= 1.0x, 2 ranks /
1 rank >= 1.7x (needs two idle cores).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from gpudeck.trainer.launch import free_port, rank_environment
from gpudeck.trainer.rank import RankSpec, run_rank

D_IN, D_SAE, BATCH, ROWS = 512, 4096, 4096, 16384


def _rank_main(spec: RankSpec, rank: int, world: int, port: int) -> None:
    os.environ.update(
        rank_environment(
            rank=rank,
            world_size=world,
            master_addr="127.0.0.1",
            master_port=port,
            device_type="cpu",
            device_index=None,
            num_threads=spec.num_threads,
            run_id=f"bench-{world}",
        )
    )
    run_rank(spec)


def trainer_rate(data_dir: Path, world: int, steps: int) -> float:
    """Activations/s the trainer reports over its second half (rank 0's wall clock)."""
    run_dir = Path(tempfile.mkdtemp(dir=data_dir))
    config = {
        "d_in": D_IN,
        "d_sae": D_SAE,
        "batch_size": BATCH,
        "steps": steps,
        "metrics_interval": steps // 2,
        "checkpoint_interval": 10**8,
        "dataset": {"type": "file", "path": "acts.npy"},
    }
    spec = RankSpec(
        job_id=world,
        kind="sae",
        config=config,
        run_dir=str(run_dir),
        data_dir=str(data_dir),
        checkpoint_dir=str(run_dir / "ckpt"),
        num_threads=1,
    )
    ctx, port = mp.get_context("spawn"), free_port()
    procs = [ctx.Process(target=_rank_main, args=(spec, r, world, port)) for r in range(world)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    assert all(proc.exitcode == 0 for proc in procs), "a rank failed: see " + str(run_dir)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    metrics = [json.loads(e["data"])["metrics"] for e in events if e["type"] == "metrics"]
    return float(metrics[-1]["activations_per_s"])


def plain_rate(acts: np.ndarray, steps: int, l1_coefficient: float = 1e-3) -> float:
    """The same math and optimizer as a bare loop in this process, one thread."""
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    w_dec = torch.randn(D_SAE, D_IN, generator=gen)
    w_dec = 0.1 * w_dec / w_dec.norm(dim=1, keepdim=True)
    params = [
        w_dec.T.clone().requires_grad_(),
        torch.zeros(D_SAE, requires_grad=True),
        w_dec.requires_grad_(),
        torch.zeros(D_IN, requires_grad=True),
    ]
    w_enc, b_enc, w_dec, b_dec = params
    optimizer = torch.optim.Adam(params, lr=1e-3)
    data, start = torch.from_numpy(np.asarray(acts)), 0.0
    for step in range(steps):
        if step == steps // 2:
            start = time.perf_counter()
        x = data[torch.randint(0, ROWS, (BATCH,), generator=gen)]
        f = torch.relu((x - b_dec) @ w_enc + b_enc)
        mse = ((f @ w_dec + b_dec) - x).pow(2).sum(-1).mean()
        l1 = l1_coefficient * (f * w_dec.norm(dim=1)).sum(-1).mean()
        (mse + l1).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return BATCH * (steps - steps // 2) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    steps = parser.parse_args().steps
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        (data_dir / "datasets").mkdir()
        acts = np.maximum(np.random.default_rng(0).standard_normal((ROWS, D_IN)), 0)
        np.save(data_dir / "datasets" / "acts.npy", acts.astype(np.float32))
        plain = plain_rate(acts.astype(np.float32), steps)
        one = trainer_rate(data_dir, 1, steps)
        two = trainer_rate(data_dir, 2, steps)
    print(f"shape: d_in {D_IN}, d_sae {D_SAE}, batch {BATCH}, fp32, 1 thread per rank, cpu")
    print(f"plain PyTorch loop, 1 thread : {plain:10.0f} activations/s")
    print(f"trainer, 1 rank              : {one:10.0f} activations/s  ({one / plain:.2f}x plain)")
    print(f"trainer, 2 ranks             : {two:10.0f} activations/s  ({two / one:.2f}x 1 rank)")


if __name__ == "__main__":
    main()
