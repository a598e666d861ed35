"""A hand-made SAE checkpoint on disk, as an `sae` job writes it, for the `sae_eval` tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpudeck.engine.checkpoint import write_checkpoint
from gpudeck.engine.checkpoint_dir import job_checkpoints
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.config import SaeConfig

SOURCE_JOB = 7


@dataclass
class FakeContext:
    """What `train` uses of a TrainContext, in one process (no process group)."""

    data_dir: Path
    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    is_main: bool = True
    reports: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    saved: list[tuple[int, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    progress_seen: list[tuple[int, int]] = field(default_factory=list)

    def report(self, step: int, metrics: dict[str, float]) -> None:
        self.reports.append((step, dict(metrics)))

    def progress(self, step: int, total: int) -> None:
        self.progress_seen.append((step, total))

    def log(self, message: str) -> None:
        pass

    def should_stop(self) -> bool:
        return False

    def save_checkpoint(self, step: int, *, tensor_files: Any, json_files: Any) -> None:
        self.saved.append((step, tensor_files, json_files))


# A ReLU SAE over 2 dimensions: latent 0 reads and writes dimension 0, latent 1 dimension 1,
# latent 2 reads nothing, so it never fires.
WEIGHTS = {
    "W_enc": torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
    "b_enc": torch.zeros(3),
    "W_dec": torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    "b_dec": torch.zeros(2),
}
# Rows 1 to 3 are reconstructed exactly; row 4's only entry is negative, so nothing fires.
ROWS = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [-1.0, 0.0]], dtype=np.float32)


def write_sae_checkpoint(
    data_dir: Path,
    step: int,
    *,
    job: int = SOURCE_JOB,
    weights: dict[str, torch.Tensor] = WEIGHTS,
    **config: Any,
) -> SaeConfig:
    d_in, d_sae = weights["W_dec"].shape[1], weights["W_dec"].shape[0]
    trained = SaeConfig.model_validate(
        {"architecture": "standard", "d_in": d_in, "d_sae": d_sae, **config}
    )
    write_checkpoint(
        job_checkpoints(data_dir, job),
        step,
        tensor_files={sae_checkpoint.WEIGHTS_FILE: weights},
        json_files={
            sae_checkpoint.CFG_FILE: {"architecture": "standard", "d_in": d_in, "d_sae": d_sae},
            sae_checkpoint.STATE_JSON_FILE: {
                "step": step,
                "config": trained.model_dump(mode="json"),
            },
        },
        keep=10,
    )
    return trained


def write_rows(data_dir: Path, name: str = "rows.npy", rows: np.ndarray = ROWS) -> str:
    (data_dir / "datasets").mkdir(parents=True, exist_ok=True)
    np.save(data_dir / "datasets" / name, rows)
    return name


def identity_sae(d_in: int) -> dict[str, torch.Tensor]:
    """A ReLU SAE that reconstructs every vector exactly: relu(x) - relu(-x) = x."""
    eye = torch.eye(d_in)
    return {
        "W_enc": torch.cat([eye, -eye], dim=1),
        "b_enc": torch.zeros(2 * d_in),
        "W_dec": torch.cat([eye, -eye], dim=0),
        "b_dec": torch.zeros(d_in),
    }


def zero_sae(d_in: int) -> dict[str, torch.Tensor]:
    """A ReLU SAE that fires nothing and reconstructs every vector as zero."""
    return {
        "W_enc": torch.zeros(d_in, 4),
        "b_enc": torch.zeros(4),
        "W_dec": torch.zeros(4, d_in),
        "b_dec": torch.zeros(d_in),
    }


def counting_ids(num: int, length: int = 16, seed: int = 0) -> np.ndarray:
    """Token sequences that count up by a fixed stride mod 100: easy to learn."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 100, size=(num, 1))
    stride = rng.integers(1, 4, size=(num, 1))
    return ((start + stride * np.arange(length)) % 100).astype(np.int64)


def counting_gpt2(models_dir: Path) -> Path:
    """activations_fixtures' tiny GPT-2 (with its word-level tokenizer) trained for 40 steps
    on counting sequences, so its loss (1.41 nats) depends on its residual stream (6.02 with
    block 0's output zeroed)."""
    from activations_fixtures import tiny_gpt2
    from transformers import GPT2LMHeadModel

    path = tiny_gpt2(models_dir, with_tokenizer=True)
    model = GPT2LMHeadModel.from_pretrained(path)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(40):
        ids = torch.as_tensor(counting_ids(16, seed=1000 + step))
        loss = model(input_ids=ids, labels=ids).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(path)
    return path
