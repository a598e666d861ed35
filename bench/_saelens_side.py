"""Run inside SAELens's venv by bench/sae_quality.py and bench/trainer_throughput.py.

    quality <data_dir> <json spec>: train SAELens SAEs with its own SAETrainer on
        <data_dir>/train.npy, then evaluate them and GPUDeck's checkpoints (loaded with
        SAE.load_from_disk) with the same code on <data_dir>/eval.npy; prints one JSON line.
    step <json spec>: time SAELens's TopK training step (forward, backward, Adam); prints JSON.

It imports nothing from GPUDeck (a different venv); everything arrives as files and JSON.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sae_lens import SAE
from sae_lens.config import LoggingConfig, SAETrainerConfig
from sae_lens.saes.batchtopk_sae import BatchTopKTrainingSAE, BatchTopKTrainingSAEConfig
from sae_lens.saes.jumprelu_sae import JumpReLUTrainingSAE, JumpReLUTrainingSAEConfig
from sae_lens.saes.sae import TrainStepInput
from sae_lens.saes.standard_sae import StandardTrainingSAE, StandardTrainingSAEConfig
from sae_lens.saes.topk_sae import TopKTrainingSAE, TopKTrainingSAEConfig
from sae_lens.training.sae_trainer import SAETrainer


def batches(data: torch.Tensor, batch: int, seed: int) -> Iterator[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    while True:
        for idx in torch.randperm(len(data), generator=gen).split(batch):
            if len(idx) == batch:
                yield data[idx]


def make_sae(arch: str, d_in: int, d_sae: int, extra: dict[str, Any]) -> Any:
    common = {
        "d_in": d_in,
        "d_sae": d_sae,
        "normalize_activations": "expected_average_only_in",
    }
    if arch == "topk":
        return TopKTrainingSAE(TopKTrainingSAEConfig(**common, **extra))
    if arch == "batchtopk":
        return BatchTopKTrainingSAE(BatchTopKTrainingSAEConfig(**common, **extra))
    if arch == "jumprelu":
        return JumpReLUTrainingSAE(JumpReLUTrainingSAEConfig(**common, **extra))
    return StandardTrainingSAE(StandardTrainingSAEConfig(**common, **extra))


def train(data: torch.Tensor, run: dict[str, Any], common: dict[str, Any]) -> Any:
    torch.manual_seed(run.get("seed", 0))
    sae = make_sae(run["arch"], data.shape[1], common["d_sae"], run.get("extra", {}))
    cfg = SAETrainerConfig(
        total_training_samples=common["steps"] * common["batch"],
        train_batch_size_samples=common["batch"],
        lr=common["lr"],
        lr_end=common["lr"] / max(1, common["lr_decay_steps"]),
        lr_warm_up_steps=common["lr_warm_up_steps"],
        lr_decay_steps=common["lr_decay_steps"],
        dead_feature_window=common["dead_window"],
        feature_sampling_window=2000,
        logger=LoggingConfig(log_to_wandb=False),
        n_batches_for_norm_estimate=10,
    )
    start = time.perf_counter()
    trainer = SAETrainer(cfg=cfg, sae=sae, data_provider=batches(data, common["batch"], 1))
    trained = trainer.fit()
    elapsed = time.perf_counter() - start
    # What SAELens saves for inference: BatchTopK becomes JumpReLU with its threshold.
    out = Path(common["out"]) / f"saelens_{run['name']}"
    trained.save_inference_model(str(out))
    return SAE.load_from_disk(str(out)), elapsed


@torch.no_grad()
def evaluate(sae: Any, x: torch.Tensor, features: torch.Tensor) -> dict[str, float]:
    f = sae.encode(x)
    x_hat = sae.decode(f)
    total = (x - x.mean(0)).pow(2).sum()
    dec = torch.nn.functional.normalize(sae.W_dec.float(), dim=1)
    true = torch.nn.functional.normalize(features, dim=1)
    return {
        "mmcs": float((true @ dec.T).max(dim=1).values.mean()),
        "explained_variance": float(1 - (x_hat - x).pow(2).sum() / total),
        "l0": float((f > 0).sum(-1).float().mean()),
        "dead_pct": float(100 * ((f > 0).sum(0) == 0).float().mean()),
    }


def quality(data_dir: Path, spec: dict[str, Any]) -> None:
    torch.set_num_threads(1)
    data = torch.from_numpy(np.load(data_dir / "train.npy"))
    x = torch.from_numpy(np.load(data_dir / "eval.npy"))
    features = torch.from_numpy(np.load(data_dir / "features.npy"))
    results = {}
    for name, path in spec["gpudeck"].items():
        results[f"gpudeck {name}"] = evaluate(SAE.load_from_disk(path), x, features)
    for run in spec["saelens"]:
        sae, elapsed = train(data, run, spec["common"])
        results[f"saelens {run['name']}"] = {
            **evaluate(sae, x, features),
            "train_s": elapsed,
        }
    print(json.dumps(results))


def step_time(spec: dict[str, Any]) -> None:
    """SAELens's TopK training step, timed as bench/trainer_throughput.py times ours."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    sae = TopKTrainingSAE(
        TopKTrainingSAEConfig(d_in=spec["d_in"], d_sae=spec["d_sae"], k=spec["k"])
    )
    optimizer = torch.optim.Adam(sae.parameters(), lr=1e-4)
    x = torch.randn(spec["batch"], spec["d_in"]).relu()
    dead = torch.zeros(spec["d_sae"], dtype=torch.bool)
    times = []
    for _ in range(spec["steps"]):
        start = time.perf_counter()
        out = sae.training_forward_pass(
            TrainStepInput(
                sae_in=x,
                coefficients={},
                dead_neuron_mask=dead,
                n_training_steps=0,
                is_logging_step=False,
            )
        )
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    half = times[len(times) // 2 :]
    print(json.dumps({"step_s": sum(half) / len(half)}))


if __name__ == "__main__":
    if sys.argv[1] == "quality":
        quality(Path(sys.argv[2]), json.loads(sys.argv[3]))
    else:
        step_time(json.loads(sys.argv[2]))
