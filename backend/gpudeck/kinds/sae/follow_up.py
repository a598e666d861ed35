""" "Evaluate a checkpoint": the `sae_eval` job that scores one of an `sae` job's checkpoints,
on the rows the job kept out of training unless the user names a file. It reads the job's
checkpoints as they are, so it waits for no end (a running or cancelled job's newest
checkpoint is scored as well as a finished one's).

When the job trained on an activations job's output (its file has a sibling `cfg.json` that
the activations kind wrote), the evaluation's loss recovered is prefilled from it: the same
model, token sequences, hook point and context length."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpudeck.engine.kinds import FollowUp
from gpudeck.engine.map.inputs import ItemsError, resolve_under
from gpudeck.kinds.sae.config import FileDataset, SaeConfig

LABEL = "Evaluate a checkpoint"
NOTE = (
    "It scores the job's newest checkpoint (pick a step below for another) on the rows the job"
    " kept out of training (or on a file of your own)."
)
# What loss recovered takes from an activations job's cfg.json (kinds/activations/extract.py).
_FROM_EXTRACTION = ("model", "input", "tensor_name", "text_field", "hook", "hook_io",
                    "context_length", "dtype")  # fmt: skip


def evaluate_checkpoint(config: SaeConfig, data_dir: Path) -> FollowUp:
    prefill: dict[str, Any] = {"dataset": {"type": "heldout"}}
    note = NOTE
    found = _extraction(config, data_dir)
    if found is not None:
        where, extraction = found
        fields = {k: extraction[k] for k in _FROM_EXTRACTION if k in extraction}
        prefill["loss_recovered"] = {"type": "lm", **fields}
        hook = f"{fields.get('hook')} ({fields.get('hook_io', 'output')})"
        note += (
            f" Loss recovered is on: it runs the model {fields.get('model')} on"
            f" {fields.get('input')} with the SAE's reconstruction spliced in at {hook}, as the"
            f" activations job extracted them (filled in from {where}); set loss recovered's"
            " type to off to skip the model."
        )
    return FollowUp(
        "sae_eval",
        LABEL,
        prefill,
        note=note,
        source_field="source_job",
        needs_output=False,
        name="eval",
        checkpoint_field="step",
    )


def _extraction(config: SaeConfig, data_dir: Path) -> tuple[str, dict[str, Any]] | None:
    """The cfg.json an activations job wrote beside the job's file (its path under datasets/,
    and its content), if there is one."""
    if not isinstance(config.dataset, FileDataset):
        return None
    where = (Path(config.dataset.path).parent / "cfg.json").as_posix()
    try:
        found = json.loads(resolve_under(data_dir / "datasets", where).read_text())
    except (ItemsError, OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("kind") != "activations":
        return None
    return where, found
