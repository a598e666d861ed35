"""The `map` kind's `train(ctx, config)`: the user's function over every chunk, in batches.

The function is imported in the rank from its code directory and called as
`function(batch, **kwargs)` (plus `device=` when its signature takes it), under
`torch.inference_mode()`. A batch is what the input holds: a tensor of rows on the rank's
device (array input), a list of JSON values (.jsonl) or a list of paths (a directory). It
returns a tensor, a NumPy array or a dict of them, rows in input order (any number of rows
per item); a chunk's output is its batches' outputs concatenated, and the engine merges the
chunks in input order.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpudeck.core.config import get_settings
from gpudeck.engine.context import TrainContext
from gpudeck.engine.map.inputs import (
    Items,
    ItemsError,
    open_items,
    resolve_new_under,
    resolve_under,
)
from gpudeck.engine.map.runner import run_map
from gpudeck.kinds.map.checks import check_inputs, module_file, resolve_code
from gpudeck.kinds.map.config import MapFunctionConfig

SINGLE = "output"  # the tensor name of a function that returns one tensor


class MapFunctionError(RuntimeError):
    """The user's function could not be loaded, raised, or returned something unusable."""


def load_function(config: MapFunctionConfig) -> tuple[Callable[..., Any], str]:
    """The function, and the SHA-256 of its module's source (a resume must run the same code)."""
    code = resolve_code(config.code, get_settings().code_roots)
    source = module_file(config, code)
    sys.path.insert(0, str(code if code.is_dir() else code.parent))
    module = importlib.import_module(config.module_name)
    loaded_from = Path(getattr(module, "__file__", "") or "").resolve()
    if loaded_from != source.resolve():
        raise MapFunctionError(
            f"module {config.module_name!r} was imported from {loaded_from}, not the code "
            "directory: its name shadows an installed module, rename it"
        )
    function = getattr(module, config.function_name, None)
    if not callable(function):
        raise MapFunctionError(f"{config.function} is not a function of {source.name}")
    return function, hashlib.sha256(source.read_bytes()).hexdigest()


def as_tensors(value: Any, where: str) -> dict[str, torch.Tensor]:
    """A function's return value as named tensors with rows (dim 0)."""
    named = dict(value) if isinstance(value, Mapping) else {SINGLE: value}
    out = {}
    for name, tensor in named.items():
        if isinstance(tensor, np.ndarray):
            tensor = torch.from_numpy(np.ascontiguousarray(tensor))
        if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            raise MapFunctionError(
                f"{where} returned {type(tensor).__name__} for {name!r}: return a tensor or "
                "array with rows, or a dict of them"
            )
        out[str(name)] = tensor.detach().cpu()
    return out


def to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, np.ndarray):  # a memory-mapped file's rows are read-only: copy them
        return torch.from_numpy(batch if batch.flags.writeable else batch.copy()).to(device)
    return batch


def _concat(parts: list[dict[str, torch.Tensor]], where: str) -> dict[str, torch.Tensor]:
    names = set(parts[0])
    if any(set(p) != names for p in parts):
        raise MapFunctionError(f"{where} returned different tensor names from batch to batch")
    return {name: torch.cat([p[name] for p in parts]) for name in sorted(names)}


def train(ctx: TrainContext, config: MapFunctionConfig) -> None:
    check_inputs(config, ctx.data_dir)  # again in the rank: the files may have changed
    function, source_sha256 = load_function(config)
    path = resolve_under(ctx.data_dir / "datasets", config.input)
    items: Items = open_items(path, config.tensor_name)
    if len(items) == 0:
        raise ItemsError(f"{config.input} holds no items")
    extra: dict[str, Any] = dict(config.kwargs)
    if "device" in inspect.signature(function).parameters:
        extra["device"] = ctx.device

    @torch.inference_mode()
    def process(start: int, stop: int, batch_size: int) -> dict[str, torch.Tensor]:
        parts = []
        for first in range(start, stop, batch_size):
            last = min(first + batch_size, stop)
            where = f"{config.function} on items [{first}, {last})"
            try:
                result = function(to_device(items.get(first, last), ctx.device), **extra)
            except Exception as exc:  # the user's code: say where, keep its traceback
                raise MapFunctionError(f"{where} raised {type(exc).__name__}: {exc}") from exc
            parts.append(as_tensors(result, where))
        return _concat(parts, config.function)

    meta = {
        "kind": "map",
        "function": config.function,
        "source_sha256": source_sha256,
        "input": config.input,
        "tensor_name": config.tensor_name,
        "kwargs": config.kwargs,
        "batch_size": config.map.batch_size,  # a function may depend on its batches
    }
    started = time.monotonic()
    out_dir = resolve_new_under(ctx.data_dir / "datasets", config.output)  # again, at use
    result = run_map(
        ctx, out_dir=out_dir, num_items=len(items), options=config.map, process=process, meta=meta
    )
    if result.manifest is not None:
        elapsed = max(time.monotonic() - started, 1e-9)
        ctx.report(len(items), {"items": float(len(items)), "items_per_s": len(items) / elapsed})
