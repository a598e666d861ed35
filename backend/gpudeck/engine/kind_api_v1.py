"""Kind API version 1's checkpoint calls, kept for one version (they go in version 3).

Version 1's `ctx.save_checkpoint(step, weights, cfg_json, state_tensors, state_json)` wrote
fixed file names, the layout of the first built-in kind; version 2 lets a kind name its own
files (engine/kind_api.py, docs/kinds.md "Changes between versions"). The shims here turn an
old call into the new one with the same four files, so a checkpoint written by an old kind
is byte for byte what version 1 wrote and its old reader, engine.checkpoint.load_checkpoint
(which takes the file names from here), resumes from it.

This is the one engine module that names those files: they are version 1's API, not a kind's
choice made by the engine (tests/engine/test_checkpoint.py exempts this file by name).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch

TensorFiles = Mapping[str, Mapping[str, torch.Tensor]]
JsonFiles = Mapping[str, Mapping[str, Any]]

WEIGHTS_FILE = "sae_weights.safetensors"
CFG_FILE = "cfg.json"
STATE_TENSORS_FILE = "trainer_state.safetensors"
STATE_JSON_FILE = "trainer_state.json"

SAVE_WARNING = (
    "DeprecationWarning: kind {kind!r} called save_checkpoint(step, weights, cfg_json, "
    "state_tensors, state_json), kind API version 1's call: it keeps working until version 3. "
    "Call save_checkpoint(step, *, tensor_files, json_files) and declare api_version=2 "
    "(docs/kinds.md, 'Changes between versions')"
)
LOAD_WARNING = (
    "DeprecationWarning: checkpoint.load_checkpoint(path) is kind API version 1's reader: it "
    "keeps working until version 3. Use checkpoint.open_checkpoint(path) and read_tensors / "
    "read_json (docs/kinds.md, 'Changes between versions')"
)


def _version_1_call(
    step: int,
    sae_tensors: Mapping[str, torch.Tensor],
    cfg_json: Mapping[str, Any],
    trainer_state_tensors: Mapping[str, torch.Tensor],
    trainer_state_json: Mapping[str, Any],
    extra_tensor_files: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
) -> None:
    """Version 1's signature, exactly: an old call binds to it or fails as it would have."""


def checkpoint_files(
    step: int, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[TensorFiles, JsonFiles]:
    """The named files a version-1 save_checkpoint call wrote, as version 2 takes them."""
    try:
        bound = inspect.signature(_version_1_call).bind(step, *args, **kwargs)
    except TypeError as exc:
        raise TypeError(
            f"save_checkpoint: {exc}; the call is save_checkpoint(step, *, tensor_files, "
            "json_files) (docs/kinds.md)"
        ) from None
    given = bound.arguments
    tensor_files = {
        WEIGHTS_FILE: given["sae_tensors"],
        STATE_TENSORS_FILE: given["trainer_state_tensors"],
        **(given.get("extra_tensor_files") or {}),
    }
    json_files = {CFG_FILE: given["cfg_json"], STATE_JSON_FILE: given["trainer_state_json"]}
    return tensor_files, json_files
