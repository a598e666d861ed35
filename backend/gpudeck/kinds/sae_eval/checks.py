"""What an evaluation names, at submit (a 422 naming the field) and again in the rank:
the source job's checkpoint on disk, the SAE config it was trained with, and the rows; with
loss recovered, the model and its sequences too (lm_checks.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import ValidationError

from gpudeck.engine.checkpoint_dir import complete_checkpoints, job_checkpoints, step_of
from gpudeck.engine.kinds import InputError
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.data import (
    DataError,
    FileSource,
    RowSource,
    SyntheticSource,
    open_source,
    resolve_dataset_path,
)
from gpudeck.kinds.sae.heldout import split_heldout
from gpudeck.kinds.sae_eval.config import EvalFile, LossRecovered, SaeEvalConfig


@dataclass(frozen=True)
class Source:
    """The checkpoint to score and the config of the run that wrote it."""

    path: Path
    step: int
    config: SaeConfig


def find_checkpoint(config: SaeEvalConfig, data_dir: Path) -> Path:
    job = config.source_job
    found = {step_of(p): p for p in complete_checkpoints(job_checkpoints(Path(data_dir), job))}
    if not found:
        raise InputError("source_job", f"job {job} has no complete checkpoint (yet)")
    if config.step is None:
        return found[max(s for s in found if s is not None)]
    if config.step not in found:
        steps = ", ".join(str(s) for s in sorted(s for s in found if s is not None))
        raise InputError(
            "step", f"job {job} has no checkpoint at step {config.step}; it has {steps}"
        )
    return found[config.step]


def read_source(config: SaeEvalConfig, data_dir: Path) -> Source:
    path = find_checkpoint(config, data_dir)
    state_path = path / sae_checkpoint.STATE_JSON_FILE
    if not (path / sae_checkpoint.WEIGHTS_FILE).is_file() or not state_path.is_file():
        raise InputError("source_job", f"job {config.source_job} is not an sae job: its "
                         f"checkpoint has no {sae_checkpoint.WEIGHTS_FILE}")  # fmt: skip
    state = json.loads(state_path.read_text())
    try:
        trained = SaeConfig.model_validate(state["config"])
    except (KeyError, ValidationError) as exc:
        why = f"its checkpoint's config cannot be read by this version: {exc}"
        raise InputError("source_job", f"job {config.source_job}: {why}") from None
    return Source(path, int(state["step"]), trained)


@dataclass(frozen=True)
class Rows:
    """The rows to score: the first `count` of `source`, and the true features when they are
    the held-out samples of synthetic data (the truth is known there)."""

    source: RowSource
    count: int
    true_features: torch.Tensor | None


def open_rows(config: SaeEvalConfig, source: Source, data_dir: Path) -> Rows:
    spec, d_in = config.dataset, source.config.d_in
    if isinstance(spec, EvalFile):
        rows = FileSource(resolve_dataset_path(data_dir, spec.path), spec.tensor_name, d_in)
        count = len(rows) if spec.max_rows is None else min(spec.max_rows, len(rows))
        return Rows(rows, count, None)
    full = open_source(source.config, data_dir)
    _, held = split_heldout(full, source.config.batch_size)
    if held is None:
        raise DataError(f"job {config.source_job} kept no rows out of training (its file is "
                        "too short to spare 1 in 20): name a file to score on")  # fmt: skip
    features = full.features if isinstance(full, SyntheticSource) else None
    return Rows(held, len(held), features)


def check_inputs(config: SaeEvalConfig, data_dir: Path) -> None:
    """At submit: the checkpoint exists, the rows can be read with its d_in, and loss
    recovered's model and sequences are there, its hook as wide as that d_in."""
    source = read_source(config, data_dir)
    field = "dataset.path" if isinstance(config.dataset, EvalFile) else "dataset"
    try:
        open_rows(config, source, data_dir)
    except DataError as exc:
        raise InputError(field, f"{exc} (the checkpoint's d_in is {source.config.d_in})") from None
    except (OSError, ValueError, KeyError) as exc:  # not a readable .npy/.safetensors file
        raise InputError(field, f"the rows cannot be read: {exc}") from None
    if isinstance(config.loss_recovered, LossRecovered):
        from gpudeck.kinds.sae_eval.lm_checks import check_loss_recovered  # imports transformers

        check_loss_recovered(config.loss_recovered, source.config.d_in, data_dir)
