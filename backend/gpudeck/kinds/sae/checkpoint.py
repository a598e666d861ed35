"""The `sae` kind's checkpoint layout: SAELens's files plus the trainer's state.

- `sae_weights.safetensors` + `cfg.json`: SAELens's layout (`sae_lens.SAE.load_from_disk`
  loads the directory as it is), the activation scale folded into the weights;
- `sparsity.safetensors`: log10 feature density, key `sparsity`, as SAELens writes it;
- `trainer_state.safetensors` (optimizer state, RNG, buffers, dead-latent counters) and
  `trainer_state.json` (step, data position, config, world size, versions): what resume needs.

The engine writes whatever files a kind names; these names are this kind's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gpudeck.engine.checkpoint import open_checkpoint
from gpudeck.engine.context import TrainContext

WEIGHTS_FILE = "sae_weights.safetensors"
CFG_FILE = "cfg.json"
SPARSITY_FILE = "sparsity.safetensors"
STATE_TENSORS_FILE = "trainer_state.safetensors"
STATE_JSON_FILE = "trainer_state.json"


@dataclass(frozen=True)
class SaeCheckpoint:
    path: Path
    step: int
    weights: dict[str, torch.Tensor]
    cfg: dict[str, Any]
    state_tensors: dict[str, torch.Tensor]
    state: dict[str, Any]


@dataclass(frozen=True)
class SaeSave:
    """What one SAE checkpoint holds, before it is written."""

    weights: dict[str, torch.Tensor]
    cfg: dict[str, Any]
    sparsity: torch.Tensor
    state_tensors: dict[str, torch.Tensor]
    state: dict[str, Any]


def save(ctx: TrainContext, step: int, saved: SaeSave) -> Path | None:
    """Rank 0 writes the checkpoint (see TrainContext.save_checkpoint)."""
    return ctx.save_checkpoint(
        step,
        tensor_files={
            WEIGHTS_FILE: saved.weights,
            SPARSITY_FILE: {"sparsity": saved.sparsity},
            STATE_TENSORS_FILE: saved.state_tensors,
        },
        json_files={CFG_FILE: saved.cfg, STATE_JSON_FILE: saved.state},
    )


def load(path: str | Path) -> SaeCheckpoint:
    """An SAE checkpoint (one written before the complete marker existed too)."""
    ckpt = open_checkpoint(path)
    state = ckpt.read_json(STATE_JSON_FILE)
    return SaeCheckpoint(
        path=ckpt.path,
        step=int(state["step"]),
        weights=ckpt.read_tensors(WEIGHTS_FILE),
        cfg=ckpt.read_json(CFG_FILE),
        state_tensors=ckpt.read_tensors(STATE_TENSORS_FILE),
        state=state,
    )
