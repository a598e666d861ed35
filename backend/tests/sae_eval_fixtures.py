"""A hand-made SAE checkpoint on disk, as an `sae` job writes it, for the `sae_eval` tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpudeck.engine.checkpoint import write_checkpoint
from gpudeck.engine.checkpoint_dir import job_checkpoints
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.config import SaeConfig

SOURCE_JOB = 7

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
    data_dir: Path, step: int, *, job: int = SOURCE_JOB, **config: Any
) -> SaeConfig:
    trained = SaeConfig.model_validate(
        {"architecture": "standard", "d_in": 2, "d_sae": 3, **config}
    )
    write_checkpoint(
        job_checkpoints(data_dir, job),
        step,
        tensor_files={sae_checkpoint.WEIGHTS_FILE: WEIGHTS},
        json_files={
            sae_checkpoint.CFG_FILE: {"architecture": "standard", "d_in": 2, "d_sae": 3},
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
