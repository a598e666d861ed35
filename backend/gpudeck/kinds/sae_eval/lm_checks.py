"""What loss recovered names, checked at submit (a 422 naming the field under
`loss_recovered`): the model directory and the token sequences, found as the activations kind
finds them (activations/checks.py); sequences the model can read (token-id rows within its
vocabulary and positions, or text with a tokenizer there); and a hook point that exists and is
as wide as the SAE's d_in. The width comes from a forward pass on the meta device: the model's
shapes without its weights, so the API never loads a model into memory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpudeck.engine.kinds import InputError
from gpudeck.engine.map.inputs import ArrayItems, ItemsError, JsonlItems, open_items
from gpudeck.kinds.activations.checks import model_dir, resolve_field
from gpudeck.kinds.activations.hooks import HookError, capture
from gpudeck.kinds.sae_eval.config import LossRecovered

FIELD = "loss_recovered"
CHECKED_ROWS = 1024  # token ids checked against the vocabulary at submit; the rank checks all
_POSITION_KEYS = ("n_positions", "max_position_embeddings")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def check_loss_recovered(spec: LossRecovered, d_in: int, data_dir: Path) -> None:
    model_path = model_dir(data_dir, spec.model, f"{FIELD}.model")
    model_config = _model_config(model_path)
    length = min(spec.context_length, _check_sequences(spec, data_dir, model_path, model_config))
    positions = next((getattr(model_config, k) for k in _POSITION_KEYS
                      if getattr(model_config, k, None)), None)  # fmt: skip
    if positions is not None and length > int(positions):
        why = f"sequences of {length} tokens exceed the model's {positions} positions"
        raise InputError(f"{FIELD}.context_length", why)
    width = hook_width(model_config, spec)
    if width is not None and width != d_in:
        why = f"{spec.hook} ({spec.hook_io}) is {width} wide; the SAE's d_in is {d_in}"
        raise InputError(f"{FIELD}.hook", why)


def _model_config(path: Path) -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"{FIELD}.model", f"its config.json cannot be read: {exc}") from None


def _check_sequences(spec: LossRecovered, data_dir: Path, model_path: Path, config: Any) -> int:
    """The sequences' length in tokens before the cut (context_length for text)."""
    field = f"{FIELD}.input"
    path = resolve_field(data_dir, "datasets", spec.input, field)
    try:
        items = open_items(path, spec.tensor_name)
    except (ItemsError, OSError, ValueError) as exc:
        raise InputError(field, f"cannot be read: {exc}") from None
    if len(items) == 0:
        raise InputError(field, f"{spec.input} holds no sequences")
    if isinstance(items, JsonlItems):
        if not any((model_path / name).exists() for name in _TOKENIZER_FILES):
            raise InputError(field, f"a .jsonl input needs a tokenizer in {spec.model}")
        return spec.context_length
    if not isinstance(items, ArrayItems):
        raise InputError(field, "expected token ids (.npy/.safetensors) or .jsonl")
    ids = np.asarray(items.get(0, min(len(items), CHECKED_ROWS)))
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise InputError(field, f"expected integer token ids [N, T], found {ids.dtype} {ids.shape}")
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    if vocab and ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise InputError(field, f"token ids outside the model's vocabulary [0, {vocab})")
    return int(ids.shape[1])


def hook_width(config: Any, spec: LossRecovered) -> int | None:
    """The hook point's width, from a forward pass on the meta device; None when the model
    does not run there (the rank then checks the width on the first batch)."""
    from transformers import AutoModelForCausalLM

    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"{FIELD}.model", f"cannot be built: {exc}") from None
    try:
        module = model.get_submodule(spec.hook)
    except AttributeError:
        raise InputError(f"{FIELD}.hook", f"{spec.model} has no module {spec.hook}") from None
    ids = torch.zeros(1, 2, dtype=torch.long, device="meta")
    try:
        return int(capture(model, module, spec.hook_io, {"input_ids": ids}).shape[-1])
    except HookError as exc:
        raise InputError(f"{FIELD}.hook", str(exc)) from None
    except Exception:  # a model whose code needs real tensors: the rank checks the width
        return None
