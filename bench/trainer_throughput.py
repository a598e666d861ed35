"""SAE trainer throughput (activations/s) on CPU: the trainer vs a plain PyTorch loop, 1 vs 2 ranks;
and the TopK step: sparse decoder vs dense, and vs SAELens's TopK training step.

    cd backend && ../.venv/bin/python ../bench/trainer_throughput.py [--steps 8] [--topk-only]

Shape: d_in 512, d_sae 4096, global batch 4096, fp32, one thread per rank. Figures are the
second half of the run (the first half warms up). Goals: trainer / plain >= 1.0x, 2 ranks /
1 rank >= 1.7x (needs two idle cores).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpudeck.engine.contract import JobLaunch
from gpudeck.engine.launch import free_port
from gpudeck.engine.rank import run_rank

D_IN, D_SAE, BATCH, ROWS = 512, 4096, 4096, 16384


def _rank_main(launch_json: str, rank: int) -> None:
    place = JobLaunch.from_json(launch_json).rank(rank)
    os.environ.update(place.environment())
    run_rank(place)


def run_trainer(
    data_dir: Path, config: dict[str, Any], world: int, job_id: int = 1, device_type: str = "cpu"
) -> tuple[Path, float]:
    """Run the real trainer (spawned rank processes, one thread each, one device each on
    cuda); returns its last checkpoint and the wall-clock seconds the ranks took."""
    run_dir = Path(tempfile.mkdtemp(dir=data_dir))
    launch = JobLaunch(
        job_id=job_id,
        kind="sae",
        config=config,
        run_dir=str(run_dir),
        data_dir=str(data_dir),
        checkpoint_dir=str(run_dir / "ckpt"),
        device_type=device_type,  # type: ignore[arg-type]
        device_indices=tuple(range(world)),
        master_port=free_port(),
        num_threads=1,
    )
    ctx, text = mp.get_context("spawn"), launch.to_json()
    procs = [ctx.Process(target=_rank_main, args=(text, r)) for r in range(world)]
    start = time.perf_counter()
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - start
    assert all(proc.exitcode == 0 for proc in procs), "a rank failed: see " + str(run_dir)
    last = max((run_dir / "ckpt").glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    return last, elapsed


def last_metrics(checkpoint: Path) -> dict[str, float]:
    run_dir = checkpoint.parents[1]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    metrics = [json.loads(e["data"])["metrics"] for e in events if e["type"] == "metrics"]
    return metrics[-1]  # type: ignore[no-any-return]


def trainer_rate(
    data_dir: Path,
    world: int,
    steps: int,
    shape: tuple[int, int, int] = (D_IN, D_SAE, BATCH),
    device_type: str = "cpu",
    **overrides: Any,
) -> float:
    """Activations/s the trainer reports over its second half (rank 0's wall clock), for
    (d_in, d_sae, global batch) `shape`."""
    config = {
        "architecture": "standard",
        "l1_coefficient": 1e-3,
        "normalize_activations": "none",  # as the plain loop: raw inputs, b_dec from 0
        "b_dec_init": "zeros",
        "d_in": shape[0],
        "d_sae": shape[1],
        "batch_size": shape[2],
        "steps": steps,
        "metrics_interval": steps // 2,
        "checkpoint_interval": 10**8,
        "dataset": {"type": "file", "path": "acts.npy"},
        **overrides,
    }
    checkpoint, _ = run_trainer(data_dir, config, world, job_id=world, device_type=device_type)
    return float(last_metrics(checkpoint)["activations_per_s"])


def plain_rate(
    acts: np.ndarray,
    steps: int,
    l1_coefficient: float = 1e-3,
    d_sae: int = D_SAE,
    batch: int = BATCH,
    device: str = "cpu",
) -> float:
    """The same math and optimizer as a bare loop in this process, one thread (on `device`:
    the rows sit on the device, as a plain loop would put them)."""
    torch.set_num_threads(1)
    gen, dev = torch.Generator().manual_seed(0), torch.device(device)
    rows, d_in = acts.shape
    w_dec = torch.randn(d_sae, d_in, generator=gen).to(dev)
    w_dec = 0.1 * w_dec / w_dec.norm(dim=1, keepdim=True)
    params = [
        w_dec.T.clone().requires_grad_(),
        torch.zeros(d_sae, device=dev, requires_grad=True),
        w_dec.requires_grad_(),
        torch.zeros(d_in, device=dev, requires_grad=True),
    ]
    w_enc, b_enc, w_dec, b_dec = params
    optimizer = torch.optim.Adam(params, lr=1e-3)
    data, start = torch.from_numpy(np.asarray(acts)).to(dev), 0.0
    for step in range(steps):
        if step == steps // 2:
            _sync(dev)
            start = time.perf_counter()
        x = data[torch.randint(0, rows, (batch,), generator=gen).to(dev)]
        f = torch.relu((x - b_dec) @ w_enc + b_enc)
        mse = ((f @ w_dec + b_dec) - x).pow(2).sum(-1).mean()
        l1 = l1_coefficient * (f * w_dec.norm(dim=1)).sum(-1).mean()
        (mse + l1).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    _sync(dev)
    return batch * (steps - steps // 2) / (time.perf_counter() - start)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


TOPK = {"d_in": 512, "d_sae": 16384, "batch": 4096, "k": 32}


TOPK_VARIANTS = {  # name: (architecture, sparse_decoder, sparse_encoder_backward)
    "dense decoder": ("topk", False, False),
    "sparse decoder, dense encoder backward": ("topk", True, False),
    "sparse decoder + encoder backward": ("topk", True, True),
    "BatchTopK dense": ("batchtopk", False, False),
    "BatchTopK sparse": ("batchtopk", True, True),
}


def topk_step_s(
    steps: int, shape: dict[str, int] = TOPK, device: str = "cpu", dtype: str = "float32"
) -> dict[str, float]:
    """Median seconds per TopK training step (the trainer's train_step, one thread, fp32) of
    each variant, the variants interleaved step by step so that the machine's load changes
    hit them alike; the first step of each is a warm-up. AuxK off (no dead latents), as in
    SAELens's timed step below. On cuda each step is timed to its synchronisation."""
    from gpudeck.kinds.sae.config import SaeConfig
    from gpudeck.kinds.sae.model import train_step
    from gpudeck.kinds.sae.train import build_model

    torch.set_num_threads(1)
    dev = torch.device(device)
    x = torch.randn(shape["batch"], shape["d_in"], generator=torch.Generator().manual_seed(0))
    runs = {}
    for name, (architecture, sparse, encoder) in TOPK_VARIANTS.items():
        config = SaeConfig(
            architecture=architecture,  # type: ignore[arg-type]
            d_in=shape["d_in"],
            d_sae=shape["d_sae"],
            k=shape["k"],
            batch_size=shape["batch"],
            sparse_decoder=sparse,
            dtype=dtype,  # type: ignore[arg-type]
        )
        model = build_model(config, dev)
        model.sparse_encoder_backward = encoder  # type: ignore[attr-defined]
        runs[name] = (model, torch.optim.Adam(model.parameters(), lr=1e-4))
    x = x.relu().to(dev).to(model.W_enc.dtype)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(steps + 1):
        for name, (model, optimizer) in runs.items():
            _sync(dev)
            start = time.perf_counter()
            train_step(model, optimizer, x, coefficient=0.0)
            _sync(dev)
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t[1:])) for name, t in times.items()}


def saelens_topk_step_s(steps: int) -> float | None:
    python = Path(os.environ.get("GPUDECK_SAELENS_PYTHON", "../.venv-saelens/bin/python"))
    if not python.exists():
        return None
    side = str(Path(__file__).with_name("_saelens_side.py"))
    spec = json.dumps({**TOPK, "steps": steps})
    out = subprocess.run(
        [str(python), side, "step", spec], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return float(json.loads(out.stdout.strip().splitlines()[-1])["step_s"])


def topk_section(steps: int) -> None:
    ours = topk_step_s(steps)
    theirs = saelens_topk_step_s(steps + 1)
    shape = ", ".join(f"{k} {v}" for k, v in TOPK.items())
    print(f"TopK step ({shape}, fp32, 1 thread, cpu, median of {steps} interleaved steps)")
    for name, seconds in ours.items():
        dense = ours["BatchTopK dense" if name.startswith("BatchTopK") else "dense decoder"]
        print(f"GPUDeck {name:40s}: {seconds:7.3f} s/step  ({dense / seconds:.2f}x dense)")
    if theirs is not None:
        best = ours["sparse decoder + encoder backward"]
        print(
            f"{'SAELens TopK (its own process, after)':48s}: {theirs:7.3f} s/step "
            f" (GPUDeck sparse {theirs / best:.2f}x faster)"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--topk-only", action="store_true")
    args = parser.parse_args()
    steps = args.steps
    topk_section(max(2, steps // 2))
    if args.topk_only:
        return
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
