""" "Train an SAE on this output": the `sae` job an extraction's output feeds.

After the extraction, `cfg.json` says `d_in` and names the file. Before (a job submitted to
wait for the extraction with `depends_on`), `d_in` is the model's hidden size, read from its
`config.json`: right for the residual stream (a block's input or output), a guess the user
should check for a hook inside a block (an MLP's hidden layer is wider).
"""

from __future__ import annotations

import json
from pathlib import Path

from gpudeck.engine.kinds import FollowUp
from gpudeck.engine.map.inputs import ItemsError, resolve_under
from gpudeck.kinds.activations.config import ActivationsConfig

CONSOLIDATED = "activations.safetensors"  # extract.CONSOLIDATED, without importing torch
LABEL = "Train an SAE on this output"
_WIDTH_KEYS = ("hidden_size", "n_embd", "d_model")


def _model_width(data_dir: Path, model: str) -> int | None:
    try:
        path = resolve_under(data_dir / "models", model) / "config.json"
        model_config = json.loads(path.read_text())
    except (ItemsError, OSError, ValueError):
        return None
    return next((int(model_config[k]) for k in _WIDTH_KEYS if k in model_config), None)


def sae_on_output(config: ActivationsConfig, data_dir: Path) -> FollowUp | None:
    cfg_path = data_dir / "datasets" / config.output / "cfg.json"
    if cfg_path.is_file():
        cfg = json.loads(cfg_path.read_text())
        dataset = cfg["sae_dataset"]
        return FollowUp("sae", LABEL, {"d_in": int(cfg["d_in"]), "dataset": dataset},
                        note=f"The SAE's d_in ({int(cfg['d_in'])}) and file come from"
                             f" {config.output}/cfg.json.")  # fmt: skip
    width = _model_width(data_dir, config.model)
    dataset = {"type": "file", "path": f"{config.output}/{CONSOLIDATED}"}
    if width is None:
        note = "The SAE's d_in is unknown: set it"
        return FollowUp("sae", LABEL, {"dataset": dataset}, note=note)
    note = (
        f"The SAE's d_in is the model's hidden size ({config.hook}); check it for a hook inside"
        " a block"
    )
    return FollowUp("sae", LABEL, {"d_in": width, "dataset": dataset}, note=note)
