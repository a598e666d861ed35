"""SAE quality on synthetic superposition data: every architecture, GPUDeck beside SAELens.

    cd backend && ../.venv/bin/python ../bench/sae_quality.py [--steps 1500] [--only topk,...]

Data: GPUDeck's synthetic source (d_in 64, 512 unit-norm true features, about 5 active per
sample, magnitudes uniform in [0.5, 1.5)), 400,000 training rows and 16,384 held-out rows,
written to .npy files both trainers read. GPUDeck trains with its real trainer (one rank, one
thread); SAELens (its own venv: GPUDECK_SAELENS_PYTHON, default .venv-saelens) with its own
SAETrainer on the same rows, same steps, batch, lr schedule and sparsity. Both final SAEs are
then evaluated by the same code in SAELens's venv, GPUDeck's loaded with SAE.load_from_disk:
mmcs (mean over true features of the best cosine with a decoder row), explained variance,
L0 and dead latents (never firing on the held-out rows).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from trainer_throughput import run_trainer

from gpudeck.kinds.sae.config import SyntheticDataset
from gpudeck.kinds.sae.data import SyntheticSource

REPO = Path(__file__).resolve().parents[1]
D_IN, FEATURES, ACTIVE, D_SAE, BATCH = 64, 512, 5.0, 512, 4096
TRAIN_ROWS, EVAL_ROWS = 400_000, 16_384
LR, WARM_UP, DECAY, DEAD_WINDOW = 4e-3, 100, 300, 200

# name: (GPUDeck config overrides, SAELens architecture, SAELens config overrides); a row
# whose SAELens architecture is "" is GPUDeck's alone (a GPUDeck option SAELens has no
# counterpart of: compare it with the row of the same architecture).
RUNS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "topk k=5": ({"architecture": "topk", "k": 5}, "topk", {"k": 5}),
    "batchtopk k=5": ({"architecture": "batchtopk", "k": 5}, "batchtopk", {"k": 5}),
    "batchtopk k=5 warm-up 750 min-freq 1e-4": (
        {
            "architecture": "batchtopk",
            "k": 5,
            "topk_warm_up_steps": 750,
            "dead_min_frequency": 1e-4,
        },
        "",
        {},
    ),
    "jumprelu l0=1": (
        {"architecture": "jumprelu", "l0_coefficient": 1.0},
        "jumprelu",
        {"l0_coefficient": 1.0},
    ),
    "jumprelu l0=1 warm-up 500": (
        {
            "architecture": "jumprelu",
            "l0_coefficient": 1.0,
            "k": 5,
            "topk_warm_up_steps": 500,
        },
        "",
        {},
    ),
    "jumprelu": (
        {"architecture": "jumprelu", "l0_coefficient": 0.01},
        "jumprelu",
        {"l0_coefficient": 0.01},
    ),
    "standard l1=5": (
        {"architecture": "standard", "l1_coefficient": 5.0},
        "standard",
        {"l1_coefficient": 5.0},
    ),
}


def write_data(root: Path) -> None:
    spec = SyntheticDataset(
        num_features=FEATURES,
        active_features=ACTIVE,
        num_samples=TRAIN_ROWS + EVAL_ROWS,
    )
    source = SyntheticSource(spec, d_in=D_IN, seed=0)
    rows = source.rows(torch.arange(TRAIN_ROWS + EVAL_ROWS)).numpy()
    (root / "datasets").mkdir()
    np.save(root / "datasets" / "train.npy", rows[:TRAIN_ROWS])
    np.save(root / "eval.npy", rows[TRAIN_ROWS:])
    np.save(root / "features.npy", source.features.numpy())
    os.link(root / "datasets" / "train.npy", root / "train.npy")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--only", default=",".join(RUNS))
    parser.add_argument("--no-saelens", action="store_true")
    args = parser.parse_args()
    names = [n for n in RUNS if n in args.only.split(",")]
    python = os.environ.get("GPUDECK_SAELENS_PYTHON", str(REPO / ".venv-saelens/bin/python"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_data(root)
        common = {
            "d_in": D_IN,
            "d_sae": D_SAE,
            "batch_size": BATCH,
            "steps": args.steps,
            "lr": LR,
            "lr_warm_up_steps": WARM_UP,
            "lr_decay_steps": DECAY,
            "dead_window_steps": DEAD_WINDOW,
            "dataset": {"type": "file", "path": "train.npy"},
            "metrics_interval": 100,
            "checkpoint_interval": 10**8,
        }
        ours, times = {}, {}
        for i, name in enumerate(names):
            path, seconds = run_trainer(root, {**common, **RUNS[name][0]}, 1, job_id=i + 1)
            ours[name], times[name] = str(path), seconds
        spec = {
            "gpudeck": ours,
            "saelens": []
            if args.no_saelens
            else [
                {"name": n, "arch": RUNS[n][1], "extra": RUNS[n][2]} for n in names if RUNS[n][1]
            ],
            "common": {
                "d_sae": D_SAE,
                "steps": args.steps,
                "batch": BATCH,
                "lr": LR,
                "lr_warm_up_steps": WARM_UP,
                "lr_decay_steps": DECAY,
                "dead_window": DEAD_WINDOW,
                "out": tmp,
            },
        }
        side = str(Path(__file__).with_name("_saelens_side.py"))
        result = subprocess.run(
            [python, side, "quality", tmp, json.dumps(spec)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(result.stderr[-4000:])
        results = json.loads(result.stdout.strip().splitlines()[-1])
    print(
        f"d_in {D_IN}, {FEATURES} true features, ~{ACTIVE:g} active, d_sae {D_SAE}, ",
        end="",
    )
    print(f"batch {BATCH}, {args.steps} steps, lr {LR} (warm-up {WARM_UP}, decay {DECAY})")
    print("| run | mmcs | explained variance | L0 | dead % | train s |")
    print("|---|---|---|---|---|---|")
    for key, m in results.items():
        seconds = times.get(key.removeprefix("gpudeck "), m.get("train_s", float("nan")))
        print(
            f"| {key} | {m['mmcs']:.3f} | {m['explained_variance']:.3f} | {m['l0']:.2f} | "
            f"{m['dead_pct']:.1f} | {seconds:.0f} |"
        )


if __name__ == "__main__":
    main()
