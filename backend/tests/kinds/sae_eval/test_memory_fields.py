"""The evaluation kind's `estimate_fields` are exactly what its estimate reads: every other
field of its config leaves the estimate byte-identical (so a sweep over them estimates once),
and each declared one can change it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from activations_fixtures import tiny_gpt2
from pydantic import BaseModel
from sae_eval_fixtures import SOURCE_JOB, identity_sae, write_sae_checkpoint

from gpudeck.engine.kinds import get_kind
from gpudeck.kinds.sae_eval.config import (
    EvalFile,
    HeldoutRows,
    LossRecovered,
    NoLossRecovered,
    SaeEvalConfig,
)
from gpudeck.kinds.sae_eval.memory import estimate_memory
from gpudeck.services.sweeps.params import with_values

LM = {"type": "lm", "model": "gpt2-tiny", "input": "tokens.npy", "hook": "transformer.h.0"}
BASE = {"source_job": SOURCE_JOB, "step": 5, "loss_recovered": LM}
NOT_READ: dict[str, list[Any]] = {
    "dataset": [
        {"type": "file", "path": "rows.npy"},
        {"type": "file", "path": "r.safetensors", "tensor_name": "x", "max_rows": 3},
    ],
    "loss_recovered.input": ["other.jsonl"],
    "loss_recovered.tensor_name": ["ids"],
    "loss_recovered.text_field": ["body"],
    "loss_recovered.hook": ["transformer.h.1"],
    "loss_recovered.hook_io": ["input"],
    "loss_recovered.max_sequences": [1, 999],
}
# Each declared field, and a change of it (of the type: the whole variant).
READ: dict[str, tuple[str, Any]] = {
    "source_job": ("source_job", SOURCE_JOB + 1),  # no checkpoint: the SAE is not counted
    "step": ("step", 10),  # another checkpoint, of another shape
    "batch_size": ("batch_size", 17),
    "loss_recovered.type": ("loss_recovered", {"type": "off"}),
    "loss_recovered.model": ("loss_recovered.model", "absent-model"),
    "loss_recovered.dtype": ("loss_recovered.dtype", "bfloat16"),
    "loss_recovered.context_length": ("loss_recovered.context_length", 64),
    "loss_recovered.batch_size": ("loss_recovered.batch_size", 3),
}


def leaf_paths() -> set[str]:
    nested: dict[str, list[type[BaseModel]]] = {
        "dataset": [HeldoutRows, EvalFile],
        "loss_recovered": [NoLossRecovered, LossRecovered],
    }
    paths = set()
    for name in SaeEvalConfig.model_fields:
        variants = nested.get(name, [])
        paths |= {f"{name}.{f}" for m in variants for f in m.model_fields} or {name}
    return paths


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    write_sae_checkpoint(tmp_path, 5)
    write_sae_checkpoint(tmp_path, 10, weights=identity_sae(4))
    tiny_gpt2(tmp_path / "models")
    return tmp_path


def estimate(data_dir: Path, **values: Any) -> str:
    config = SaeEvalConfig.model_validate(with_values(BASE, values))
    return estimate_memory(config, 1, device_type="cuda", data_dir=data_dir).model_dump_json()


def test_every_field_is_declared_or_not_read() -> None:
    kind = get_kind("sae_eval")
    assert kind is not None and kind.estimate_fields is not None
    assert set(kind.estimate_fields) == set(READ)
    dataset_paths = {p for p in leaf_paths() if p.startswith("dataset.")}
    assert leaf_paths() == set(READ) | set(NOT_READ) - {"dataset"} | dataset_paths


def test_fields_left_out_of_the_declaration_change_nothing(data_dir: Path) -> None:
    base = estimate(data_dir)
    for path, values in NOT_READ.items():
        for value in values:
            assert estimate(data_dir, **{path: value}) == base, (path, value)


def test_each_declared_field_can_change_the_estimate(data_dir: Path) -> None:
    base = estimate(data_dir)
    for field, (path, value) in READ.items():
        assert estimate(data_dir, **{path: value}) != base, field
