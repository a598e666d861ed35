"""SAE quality on synthetic superposition data: every architecture, GPUDeck beside SAELens.

    cd backend && ../.venv/bin/python ../bench/sae_quality.py [--scale 64|512] [--seeds 0,1]
        [--steps 1500] [--only topk,...] [--no-saelens]

Data: GPUDeck's synthetic source (unit-norm true features, a few active per sample,
magnitudes uniform in [0.5, 1.5)) at one of two scales (SCALES), a training slice and 16,384
held-out rows, written to .npy files both trainers read; seed s draws other true features and
other rows, and seeds both trainers. GPUDeck trains with its real trainer (one rank, one
thread) and its own defaults (the schedules as shares of the run, the architecture's
warm-up, frequency rule and L0 coefficient) unless a row overrides them; SAELens (its own venv:
GPUDECK_SAELENS_PYTHON, default .venv-saelens) with its own SAETrainer on the same rows, same
steps, batch, lr schedule (GPUDeck's, resolved to steps) and sparsity (k, or the L0/L1
coefficient GPUDeck's row trains with). Both final SAEs are then evaluated by the same code in
SAELens's venv, GPUDeck's loaded with SAE.load_from_disk: mmcs (mean over true features of the
best cosine with a decoder row), explained variance, L0 and dead latents (never firing on the
held-out rows). The last lines give each row's mean and spread over the seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from trainer_throughput import run_trainer

from gpudeck.kinds.sae.config import SaeConfig, SyntheticDataset
from gpudeck.kinds.sae.data import SyntheticSource

REPO = Path(__file__).resolve().parents[1]
EVAL_ROWS, DEAD_WINDOW = 16_384, 200
# Two data scales: the (d_in 64, 8x superposition, 5 active) and a wider, denser one
# (d_in 512, 2x superposition, 10 active) at a batch the shared CPU can run.
SCALES: dict[str, dict[str, Any]] = {
    "64": {
        "d_in": 64,
        "features": 512,
        "active": 5.0,
        "d_sae": 512,
        "batch": 4096,
        "k": 5,
        "train_rows": 400_000,
    },
    "512": {
        "d_in": 512,
        "features": 1024,
        "active": 10.0,
        "d_sae": 1024,
        "batch": 512,
        "k": 10,
        "train_rows": 150_000,
    },
}

# name: (GPUDeck config overrides, SAELens architecture); k comes from the scale. SAELens
# trains the same architecture at the same k, or at the L0/L1 coefficient GPUDeck's config
# resolves to; "" for a GPUDeck-only row (an option SAELens has no counterpart of).
RUNS: dict[str, tuple[dict[str, Any], str]] = {
    "topk": ({"architecture": "topk"}, "topk"),
    "batchtopk": ({"architecture": "batchtopk"}, "batchtopk"),
    "jumprelu": ({"architecture": "jumprelu"}, "jumprelu"),
    "batchtopk no warm-up": (
        {"architecture": "batchtopk", "topk_warm_up_steps": 0, "dead_min_frequency": 0.0},
        "",
    ),
    "jumprelu l0=0.01 no warm-up": (
        {"architecture": "jumprelu", "l0_coefficient": 0.01, "topk_warm_up_steps": 0},
        "",
    ),
    "standard l1=5": ({"architecture": "standard", "l1_coefficient": 5.0}, "standard"),
    "standard l1=3": ({"architecture": "standard", "l1_coefficient": 3.0}, "standard"),
    # JumpReLU's TopK warm-up against shorter ones and none, at the default coefficient.
    "jumprelu no warm-up": ({"architecture": "jumprelu", "topk_warm_up_steps": 0}, ""),
    "jumprelu warm-up 0.1": ({"architecture": "jumprelu", "topk_warm_up_steps": 0.1}, ""),
    "jumprelu warm-up 0.25": ({"architecture": "jumprelu", "topk_warm_up_steps": 0.25}, ""),
    "jumprelu warm-up 0.5": ({"architecture": "jumprelu", "topk_warm_up_steps": 0.5}, ""),
    "jumprelu l0=4": ({"architecture": "jumprelu", "l0_coefficient": 4.0}, ""),
    # SAELens's trainer clips the gradient norm at 1 always; GPUDeck's only when asked.
    "jumprelu clip 1": ({"architecture": "jumprelu", "grad_clip_norm": 1.0}, ""),
    "jumprelu no warm-up clip 1": (
        {"architecture": "jumprelu", "topk_warm_up_steps": 0, "grad_clip_norm": 1.0},
        "",
    ),
}
# The k-sparse family's AuxK before issue 26's defaults (Gao et al.'s 1/32; SAELens's is 1),
# and TopK with BatchTopK's frequency rule.
RUNS |= {
    "topk aux 1/32": ({"architecture": "topk", "aux_k_coefficient": 1 / 32}, ""),
    "batchtopk aux 1/32": ({"architecture": "batchtopk", "aux_k_coefficient": 1 / 32}, ""),
    "topk min freq 1e-4": ({"architecture": "topk", "dead_min_frequency": 1e-4}, ""),
}
DEFAULT_RUNS = "topk,batchtopk,jumprelu"


def write_data(root: Path, scale: dict[str, Any], seed: int) -> None:
    spec = SyntheticDataset(
        num_features=scale["features"],
        active_features=scale["active"],
        num_samples=scale["train_rows"] + EVAL_ROWS,
    )
    source = SyntheticSource(spec, d_in=scale["d_in"], seed=seed)
    rows = source.rows(torch.arange(scale["train_rows"] + EVAL_ROWS)).numpy()
    (root / "datasets").mkdir()
    np.save(root / "datasets" / "train.npy", rows[: scale["train_rows"]])
    np.save(root / "eval.npy", rows[scale["train_rows"] :])
    np.save(root / "features.npy", source.features.numpy())
    os.link(root / "datasets" / "train.npy", root / "train.npy")


def saelens_extra(config: SaeConfig) -> dict[str, Any]:
    if config.architecture in ("topk", "batchtopk"):
        return {"k": config.k}
    if config.architecture == "jumprelu":
        return {"l0_coefficient": config.l0_coefficient_value}
    return {"l1_coefficient": config.l1_coefficient}


def one_seed(
    scale: dict[str, Any], seed: int, names: list[str], steps: int, saelens: list[str]
) -> dict[str, dict[str, float]]:
    """GPUDeck's rows `names` and SAELens's rows `saelens`, on one seed's data."""
    python = os.environ.get("GPUDECK_SAELENS_PYTHON", str(REPO / ".venv-saelens/bin/python"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_data(root, scale, seed)
        common = {
            "d_in": scale["d_in"],
            "d_sae": scale["d_sae"],
            "k": scale["k"],
            "batch_size": scale["batch"],
            "steps": steps,
            "seed": seed,
            "dead_window_steps": DEAD_WINDOW,
            "dataset": {"type": "file", "path": "train.npy"},
            "metrics_interval": 100,
            "checkpoint_interval": 10**8,
        }
        configs = {n: SaeConfig.model_validate({**common, **RUNS[n][0]}) for n in names}
        lr_warm_up, lr_decay, _ = SaeConfig.model_validate(common).schedule_lengths()
        ours, times = {}, {}
        for i, name in enumerate(names):
            path, seconds = run_trainer(root, configs[name].model_dump(), 1, job_id=i + 1)
            ours[name], times[name] = str(path), seconds
        spec = {
            "gpudeck": ours,
            "saelens": [
                {"name": n, "arch": RUNS[n][1], "extra": saelens_extra(configs[n]), "seed": seed}
                for n in saelens
                if RUNS[n][1]
            ],
            "common": {
                "d_sae": scale["d_sae"],
                "steps": steps,
                "batch": scale["batch"],
                "lr": common.get("lr", SaeConfig().lr),
                "lr_warm_up_steps": lr_warm_up,
                "lr_decay_steps": lr_decay,
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
        results: dict[str, dict[str, float]] = json.loads(result.stdout.strip().splitlines()[-1])
    for key, m in results.items():
        m.setdefault("train_s", times.get(key.removeprefix("gpudeck "), float("nan")))
    return results


FIELDS = ("mmcs", "explained_variance", "l0", "dead_pct")


def summary_row(key: str, runs: list[dict[str, float]]) -> str:
    cells = []
    for field in FIELDS:
        values = [m[field] for m in runs]
        spread = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
        digits = 1 if field == "dead_pct" else 2 if field == "l0" else 3
        cells.append(f"{statistics.mean(values):.{digits}f}{spread}")
    return f"| {key} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", choices=sorted(SCALES), default="64")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--only", default=DEFAULT_RUNS)
    parser.add_argument("--no-saelens", action="store_true")
    parser.add_argument(
        "--saelens-seeds", default="", help="train SAELens for these seeds only (default: all)"
    )
    parser.add_argument(
        "--saelens-runs", default="", help="train SAELens for these rows only (default: all)"
    )
    args = parser.parse_args()
    scale = SCALES[args.scale]
    names = [n for n in RUNS if n in args.only.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    print(
        f"d_in {scale['d_in']}, {scale['features']} true features, ~{scale['active']:g} active,"
        f" d_sae {scale['d_sae']}, k {scale['k']}, batch {scale['batch']}, {args.steps} steps,"
        f" seeds {args.seeds}, GPUDeck's defaults unless named"
    )
    print("| run | seed | mmcs | explained variance | L0 | dead % | train s |")
    print("|---|---|---|---|---|---|---|")
    by_run: dict[str, list[dict[str, float]]] = {}
    for seed in seeds:
        with_saelens = not args.no_saelens and (
            not args.saelens_seeds or str(seed) in args.saelens_seeds.split(",")
        )
        wanted = (args.saelens_runs or args.only).split(",")
        theirs = [n for n in names if with_saelens and n in wanted]
        results = one_seed(scale, seed, names, args.steps, theirs)
        for key, m in results.items():
            by_run.setdefault(key, []).append(m)
            print(
                f"| {key} | {seed} | {m['mmcs']:.3f} | {m['explained_variance']:.3f} |"
                f" {m['l0']:.2f} | {m['dead_pct']:.1f} | {m['train_s']:.0f} |",
                flush=True,
            )
    print(f"\nmean ± sd over seeds {args.seeds}")
    print("| run | mmcs | explained variance | L0 | dead % |")
    print("|---|---|---|---|---|")
    for key, runs in by_run.items():
        print(summary_row(key, runs))


if __name__ == "__main__":
    main()
