""" "Evaluate a checkpoint": the `sae_eval` job that scores one of an `sae` job's checkpoints,
on the rows the job kept out of training unless the user names a file. It reads the job's
checkpoints as they are, so it waits for no end (a running or cancelled job's newest
checkpoint is scored as well as a finished one's)."""

from __future__ import annotations

from pathlib import Path

from gpudeck.engine.kinds import FollowUp
from gpudeck.kinds.sae.config import SaeConfig

LABEL = "Evaluate a checkpoint"
NOTE = (
    "It scores the job's newest checkpoint (pick a step below for another) on the rows the job"
    " kept out of training (or on a file of your own)."
)


def evaluate_checkpoint(config: SaeConfig, data_dir: Path) -> FollowUp:
    return FollowUp(
        "sae_eval",
        LABEL,
        {"dataset": {"type": "heldout"}},
        note=NOTE,
        source_field="source_job",
        needs_output=False,
        name="eval",
        checkpoint_field="step",
    )
