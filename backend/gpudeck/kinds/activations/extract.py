"""The `activations` kind's `train(ctx, config)`: a map job over the input sequences.

Each chunk's output is `activations` [rows, d_in] in input order (for `positions="all"`, the
non-padding positions of each sequence, sequence after sequence). When every chunk is written,
rank 0 streams them into `<output>/activations.safetensors`, the file a `sae` job names as
`{"type": "file", "path": "<output>/activations.safetensors"}`, and writes `cfg.json`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from gpudeck.engine.context import TrainContext
from gpudeck.engine.map import output
from gpudeck.engine.map.inputs import (
    Items,
    ItemsError,
    open_items,
    resolve_new_under,
    resolve_under,
)
from gpudeck.engine.map.runner import run_map
from gpudeck.kinds.activations.config import ActivationsConfig
from gpudeck.kinds.activations.hooks import capture

TENSOR = "activations"
CONSOLIDATED = "activations.safetensors"  # also named in follow_up.py (torch-free)
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_model(model_dir: Path, dtype: str, device: torch.device) -> tuple[Any, Any]:
    """The model (eval mode, on `device`) and its tokenizer if the directory has one; offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach a hub, whatever the library defaults to
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one rank, its own thread budget
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model: Any = AutoModelForCausalLM.from_pretrained(
        model_dir, local_files_only=True, dtype=_DTYPES[dtype]
    )
    tokenizer = None
    if any((model_dir / name).exists() for name in ("tokenizer.json", "tokenizer_config.json")):
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        tokenizer.padding_side = "right"  # valid positions first: rows stay in order
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
    return model.to(device).eval(), tokenizer


class Encoding(Protocol):
    """What `encode` reads of a config (the activations kind's, or sae_eval's loss recovered)."""

    @property
    def context_length(self) -> int: ...

    @property
    def text_field(self) -> str: ...


def encode(batch: Any, tokenizer: Any, config: Encoding) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of a batch of items: token-id rows or JSONL records."""
    if isinstance(batch, np.ndarray):
        ids = torch.from_numpy(np.array(batch[:, : config.context_length], dtype=np.int64))
        return ids, torch.ones_like(ids)
    if tokenizer is None:
        raise ItemsError("a .jsonl input needs a tokenizer in the model directory")
    texts = [row if isinstance(row, str) else row[config.text_field] for row in batch]
    encoded = tokenizer(
        texts,
        truncation=True,
        max_length=config.context_length,
        padding=True,
        return_tensors="pt",
    )
    return encoded["input_ids"], encoded["attention_mask"]


def select_rows(acts: torch.Tensor, mask: torch.Tensor, positions: str) -> torch.Tensor:
    """[rows, d]: every unmasked position (sequence-major), or each sequence's last token."""
    if positions == "all":
        return acts[mask.bool()]
    last = mask.sum(dim=1) - 1
    return acts[torch.arange(acts.shape[0]), last]


def forward_bytes_per_sequence(width: int, heads: int, context_length: int, itemsize: int) -> int:
    """A rough peak of one sequence's forward pass without a graph: ~20 activations of width
    d_model per token, and the attention scores (heads x T x T)."""
    return (context_length * width * 20 + heads * context_length**2 * 2) * itemsize


def estimate_bytes(model: Any, context_length: int) -> Any:
    """A rough per-batch peak for batch size `auto`: the weights and each sequence's forward."""
    width = int(getattr(model.config, "hidden_size", 0) or getattr(model.config, "n_embd", 1))
    heads = int(getattr(model.config, "num_attention_heads", 1) or 1)
    itemsize = next(model.parameters()).element_size()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    per_seq = forward_bytes_per_sequence(width, heads, context_length, itemsize)

    def per_batch(batch: int) -> int:
        return weights + batch * per_seq

    return per_batch


def train(ctx: TrainContext, config: ActivationsConfig) -> None:
    model_dir = resolve_under(ctx.data_dir / "models", config.model)
    datasets = ctx.data_dir / "datasets"
    items: Items = open_items(resolve_under(datasets, config.input), config.tensor_name)
    if len(items) == 0:
        raise ItemsError(f"{config.input} holds no items")
    out_dir = resolve_new_under(datasets, config.output)  # checked at submit, again at use
    model, tokenizer = load_model(model_dir, config.dtype, ctx.device)
    module = model.get_submodule(config.hook)

    @torch.inference_mode()
    def process(start: int, stop: int, batch_size: int) -> dict[str, torch.Tensor]:
        parts = []
        for first in range(start, stop, batch_size):
            ids, mask = encode(items.get(first, min(first + batch_size, stop)), tokenizer, config)
            inputs = {"input_ids": ids.to(ctx.device)}
            if not bool(mask.all()):  # without padding, no mask: the causal fast path
                inputs["attention_mask"] = mask.to(ctx.device)
            acts = capture(model, module, config.hook_io, inputs)
            parts.append(select_rows(acts, mask.to(acts.device), config.positions).cpu())
        return {TENSOR: torch.cat(parts)}

    meta = {
        "kind": "activations",
        "model": config.model,
        "input": config.input,
        "tensor_name": config.tensor_name,
        "text_field": config.text_field,
        "hook": config.hook,
        "hook_io": config.hook_io,
        "positions": config.positions,
        "context_length": config.context_length,
        "dtype": config.dtype,
    }
    started = time.monotonic()
    result = run_map(
        ctx,
        out_dir=out_dir,
        num_items=len(items),
        options=config.map,
        process=process,
        meta=meta,
        estimate_bytes=estimate_bytes(model, config.context_length),
    )
    if result.manifest is None:  # stopped, or not rank 0
        return
    output.consolidate(out_dir, TENSOR, out_dir / CONSOLIDATED)
    count = result.manifest["rows"][TENSOR]
    d_in = result.manifest["chunks"][0]["shapes"][TENSOR][1]
    cfg = {
        **meta,
        "d_in": d_in,
        "count": count,
        "sequences": len(items),
        "file": CONSOLIDATED,
        "sae_dataset": {"type": "file", "path": f"{config.output}/{CONSOLIDATED}"},
    }
    tmp = out_dir / ".cfg.json.tmp"
    tmp.write_text(json.dumps(cfg, indent=2))
    tmp.replace(out_dir / "cfg.json")
    elapsed = time.monotonic() - started
    # at the last item: after the engine's reports of each chunk, the chart's last point
    ctx.report(len(items), {"rows": float(count), "items_per_s": len(items) / elapsed})
