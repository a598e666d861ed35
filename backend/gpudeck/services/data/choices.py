"""What a form field may pick from the data directory (a kind's schema marks such a field with
`x-choices`: "models" or "datasets"): the models under <data_dir>/models and the data files under
<data_dir>/datasets, each with what one chooses by: a model's width (its d_in at the residual
stream) and layers, a file's tensors and shape, and the size on disk. Nothing outside those
directories is read, links are not followed, and a map job's chunk files are left out (its
consolidated file is listed)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudeck.services.data.formats import Tensor, inspect_file
from gpudeck.services.errors import InvalidInput

SOURCES = ("models", "datasets")
MAX_ITEMS = 500
MAX_DEPTH = 4
DATA_SUFFIXES = (".npy", ".safetensors", ".jsonl")
_WIDTH_KEYS = ("hidden_size", "n_embd", "d_model")
_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
_CHUNK = re.compile(r"^chunk_\d+\.safetensors$")
_FLOAT_DTYPES = {"F64", "F32", "F16", "BF16", "float64", "float32", "float16"}


@dataclass(frozen=True)
class DataChoice:
    value: str  # what the field takes: the path under models/ or datasets/
    size_bytes: int
    d_in: int | None  # a model's hidden size; a float [N, d_in] file's row width
    detail: str
    root: str | None = None  # a code root's .py file: the root it lies under


def list_choices(data_dir: Path, source: str) -> list[DataChoice]:
    if source not in SOURCES:
        raise InvalidInput([("source", f"must be one of {', '.join(SOURCES)}")])
    root = data_dir / source
    if not root.is_dir():
        return []
    found = _models(root) if source == "models" else _datasets(root)
    return sorted(found, key=lambda c: c.value)[:MAX_ITEMS]


def walk_tree(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """Directories under `root` (no links, no dot names), at most MAX_DEPTH deep; a caller may
    prune `dirs` in place."""
    for top, dirs, files in os.walk(root, followlinks=False):
        here = Path(top)
        depth = len(here.relative_to(root).parts)
        dirs[:] = [d for d in sorted(dirs) if not d.startswith(".") and depth < MAX_DEPTH]
        yield here, dirs, [f for f in sorted(files) if not f.startswith(".")]


def _size(directory: Path) -> int:
    total = 0
    for top, _, files in os.walk(directory, followlinks=False):
        for name in files:
            path = Path(top) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def _models(root: Path) -> list[DataChoice]:
    found: list[DataChoice] = []
    for here, dirs, files in walk_tree(root):
        if "config.json" not in files or len(found) >= MAX_ITEMS:
            continue
        dirs.clear()  # a model's subfolders are its own
        try:
            config: dict[str, Any] = json.loads((here / "config.json").read_text())
        except (OSError, ValueError):
            continue
        width = _first_int(config, _WIDTH_KEYS)
        layers = _first_int(config, _LAYER_KEYS)
        words = [str(config.get("model_type") or "model")]
        if layers is not None:
            words.append(f"{layers} layers")
        if width is not None:
            words.append(f"hidden size {width}")
        value = here.relative_to(root).as_posix()
        found.append(DataChoice(value, _size(here), width, " · ".join(words)))
    return found


def _first_int(config: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        if isinstance(config.get(key), int):
            return int(config[key])
    return None


def _datasets(root: Path) -> list[DataChoice]:
    found: list[DataChoice] = []
    for here, _, files in walk_tree(root):
        for name in files:
            path = here / name
            if not name.endswith(DATA_SUFFIXES) or _CHUNK.match(name) or path.is_symlink():
                continue
            value = path.relative_to(root).as_posix()
            described = _describe(path)
            if described is not None:
                found.append(DataChoice(value, path.stat().st_size, *described))
            if len(found) >= MAX_ITEMS:
                return found
    return found


def _describe(path: Path) -> tuple[int | None, str] | None:
    """(d_in, detail) of a data file; None for one whose header does not read."""
    if path.suffix == ".jsonl":
        return None, "JSON lines (text)"
    try:
        _, tensors = inspect_file(path)
    except (InvalidInput, OSError):
        return None
    first = tensors[0]
    d_in = first.shape[1] if len(first.shape) == 2 and first.dtype in _FLOAT_DTYPES else None
    shown = ", ".join(_tensor_text(t) for t in tensors[:3])
    more = f" and {len(tensors) - 3} more" if len(tensors) > 3 else ""
    return d_in, shown + more


def _tensor_text(tensor: Tensor) -> str:
    shape = "[" + ", ".join(str(n) for n in tensor.shape) + "]"
    name = f"{tensor.name} " if tensor.name else ""
    return f"{name}{shape} {tensor.dtype}"
