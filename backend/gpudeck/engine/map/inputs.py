"""A map job's input: N items read by position, whatever holds them.

- rows of a `.npy` or `.safetensors` array (memory-mapped: `get` reads only its rows)
- lines of a `.jsonl` file (each a JSON value; line offsets are indexed once on open)
- the files of a directory (non-hidden regular files, sorted by name; items are paths)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from safetensors import safe_open


class ItemsError(ValueError):
    """An input that cannot be used: missing, escaping its root, or of an unknown kind."""


class Items(Protocol):
    def __len__(self) -> int: ...

    def get(self, start: int, stop: int) -> Any: ...


class ArrayItems:
    def __init__(self, path: Path, tensor_name: str | None = None) -> None:
        if path.suffix == ".npy":
            self._array: Any = np.load(path, mmap_mode="r")
        else:
            handle = safe_open(str(path), framework="numpy")
            names = list(handle.keys())
            if tensor_name is None and len(names) != 1:
                raise ItemsError(f"{path.name} holds {len(names)} tensors: name one")
            name = tensor_name or names[0]
            if name not in names:
                raise ItemsError(f"{path.name} has no tensor {name!r}")
            self._array = handle.get_slice(name)
        shape = self._array.shape if path.suffix == ".npy" else self._array.get_shape()
        if not shape:
            raise ItemsError(f"{path.name} holds a scalar, not rows")
        self._len = int(shape[0])

    def __len__(self) -> int:
        return self._len

    def get(self, start: int, stop: int) -> np.ndarray:
        return np.ascontiguousarray(self._array[start:stop])


class JsonlItems:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: list[int] = []
        offset = 0
        with path.open("rb") as f:
            for line in f:
                if line.strip():
                    self._offsets.append(offset)
                offset += len(line)

    def __len__(self) -> int:
        return len(self._offsets)

    def get(self, start: int, stop: int) -> list[Any]:
        out = []
        with self.path.open("rb") as f:
            for offset in self._offsets[start:stop]:
                f.seek(offset)
                out.append(json.loads(f.readline()))
        return out


class DirItems:
    def __init__(self, path: Path) -> None:
        self.files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))

    def __len__(self) -> int:
        return len(self.files)

    def get(self, start: int, stop: int) -> list[Path]:
        return self.files[start:stop]


def resolve_under(root: Path, relative: str) -> Path:
    """`relative` inside `root` (which must exist); refuses absolute paths, '..' and links out."""
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts:
        raise ItemsError(f"path {relative!r} must be relative, without '..'")
    base = root.resolve()
    try:
        path = (base / rel).resolve(strict=True)
    except (FileNotFoundError, RuntimeError) as exc:
        raise ItemsError(f"{relative!r} not found under {root.name}/") from exc
    if not path.is_relative_to(base):
        raise ItemsError(f"path {relative!r} escapes {root.name}/")
    return path


def resolve_new_under(root: Path, relative: str) -> Path:
    """Where an output goes: `relative` inside `root`, which it need not exist yet; the
    parts that exist are resolved (a symlinked folder is followed) before the check, so an
    output cannot be written through a link to outside `root`."""
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts:
        raise ItemsError(f"path {relative!r} must be relative, without '..'")
    base = root.resolve()
    path = (base / rel).resolve()
    if not path.is_relative_to(base) or path == base:
        raise ItemsError(f"path {relative!r} escapes {root.name}/")
    return path


def open_items(path: Path, tensor_name: str | None = None) -> Items:
    if path.is_dir():
        return DirItems(path)
    if path.suffix in (".npy", ".safetensors"):
        return ArrayItems(path, tensor_name)
    if path.suffix == ".jsonl":
        return JsonlItems(path)
    raise ItemsError(f"{path.name}: expected a directory, .npy, .safetensors or .jsonl")
