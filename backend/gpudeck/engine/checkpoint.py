"""Atomic, safetensors-only checkpoints: `<checkpoint_dir>/step_<n>/`, files named by the kind.

A kind passes named files: tensor dicts (each written as one safetensors file) and JSON
documents. They are written into `.tmp-step_<n>-<pid>/` with the complete marker
(engine/checkpoint_dir.py), every file and the directory fsynced, then the directory is renamed
to `step_<n>` and the parent fsynced: a crash at any moment leaves either the complete directory
or none. Nothing here unpickles: tensors are safetensors, the rest JSON. Which files a
checkpoint holds, and what they mean, is the kind's business (docs/kinds.md).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from gpudeck.engine import checkpoint_tmp, kind_api_v1
from gpudeck.engine.checkpoint_dir import COMPLETE_MARKER, complete_checkpoints, step_of
from gpudeck.engine.files import fsync_path

log = logging.getLogger(__name__)
TensorFiles = Mapping[str, Mapping[str, torch.Tensor]]
JsonFiles = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint directory; its files are read when asked for, by name."""

    path: Path
    step: int

    def read_tensors(self, name: str) -> dict[str, torch.Tensor]:
        return load_file(self.path / name)

    def read_json(self, name: str) -> dict[str, Any]:
        data = json.loads((self.path / name).read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{self.path / name} holds no JSON object")
        return data

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()


def _check_names(tensor_files: TensorFiles, json_files: JsonFiles) -> list[str]:
    """The file names, refused unless each is a plain, visible name used once: hidden names
    are GPUDeck's own (the marker), and a path could leave the directory."""
    names = [*tensor_files, *json_files]
    for name in names:
        if not name or name.startswith(".") or "/" in name or "\\" in name:
            raise ValueError(f"checkpoint file name {name!r}: use a plain name, not hidden")
    if len(set(names)) != len(names):
        raise ValueError(f"checkpoint file names repeat: {sorted(names)}")
    if not names:
        raise ValueError("a checkpoint needs at least one file")
    return names


def _contiguous(tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}


def _fill(tmp: Path, tensor_files: TensorFiles, json_files: JsonFiles) -> None:
    for name, tensors in tensor_files.items():
        save_file(_contiguous(tensors), tmp / name)
    for name, data in json_files.items():
        (tmp / name).write_text(json.dumps(data, indent=2, sort_keys=True))
    (tmp / COMPLETE_MARKER).touch()  # inside before the rename: complete as it appears


def write_checkpoint(
    checkpoint_dir: str | Path,
    step: int,
    *,
    tensor_files: TensorFiles,
    json_files: JsonFiles | None = None,
    keep: int,
) -> Path:
    """Write step_<step> atomically with the named files, then keep the newest `keep`."""
    json_files = json_files or {}
    names = _check_names(tensor_files, json_files)
    root = Path(checkpoint_dir)
    root.mkdir(parents=True, exist_ok=True)
    checkpoint_tmp.remove_partial(root)  # left by a writer that died
    tmp = checkpoint_tmp.write_dir(root, step)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _fill(tmp, tensor_files, json_files)
    for name in (*names, COMPLETE_MARKER):
        fsync_path(tmp / name)
    fsync_path(tmp)
    final = root / f"step_{step}"
    if final.exists():  # the same step written again (a resumed run): replace it
        _discard(root, final)
    os.rename(tmp, final)
    fsync_path(root)
    prune_checkpoints(root, keep)
    return final


def _discard(root: Path, path: Path) -> None:
    # Rename first so a half-deleted directory never looks like a checkpoint.
    doomed = checkpoint_tmp.delete_dir(root, path.name)
    os.rename(path, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def prune_checkpoints(root: Path, keep: int) -> None:
    complete = complete_checkpoints(root)
    for path in complete[: max(0, len(complete) - max(1, keep))]:
        _discard(root, path)


def list_checkpoints(checkpoint_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    return complete_checkpoints(Path(checkpoint_dir))


def latest_checkpoint(checkpoint_dir: str | Path) -> Path | None:
    """The newest complete step_<n> dir; temporary and unmarked dirs are ignored."""
    complete = list_checkpoints(checkpoint_dir)
    return complete[-1] if complete else None


def open_checkpoint(path: str | Path) -> Checkpoint:
    """The checkpoint at `path` (a `step_<n>` directory, e.g. TrainContext.resume_from)."""
    path = Path(path)
    step = step_of(path)
    if step is None or not path.is_dir():
        raise ValueError(f"{path} is not a step_<n> checkpoint directory")
    return Checkpoint(path=path, step=step)


@dataclass(frozen=True)
class LoadedCheckpoint(Checkpoint):
    """Kind API version 1's checkpoint: its four files, already read."""

    weights: dict[str, torch.Tensor]
    cfg: dict[str, Any]
    state_tensors: dict[str, torch.Tensor]
    state: dict[str, Any]


_load_warned = False


def load_checkpoint(path: str | Path) -> LoadedCheckpoint:
    """Kind API version 1's reader, kept until version 3 (use open_checkpoint), with a warning
    in the rank's log once per process."""
    global _load_warned
    if not _load_warned:
        _load_warned = True
        log.warning("%s", kind_api_v1.LOAD_WARNING)
    found = open_checkpoint(path)
    return LoadedCheckpoint(
        path=found.path,
        step=found.step,
        weights=found.read_tensors(kind_api_v1.WEIGHTS_FILE),
        cfg=found.read_json(kind_api_v1.CFG_FILE),
        state_tensors=found.read_tensors(kind_api_v1.STATE_TENSORS_FILE),
        state=found.read_json(kind_api_v1.STATE_JSON_FILE),
    )


# --- optimizer and RNG state as flat tensor dicts --------------------------------------------


def optimizer_tensors(
    optimizer: torch.optim.Optimizer, named_params: Iterable[tuple[str, torch.nn.Parameter]]
) -> dict[str, torch.Tensor]:
    """Per-parameter optimizer state keyed `optim.<param>.<field>` (e.g. Adam's exp_avg)."""
    out = {}
    for name, param in named_params:
        for field, value in optimizer.state.get(param, {}).items():
            if isinstance(value, torch.Tensor):
                out[f"optim.{name}.{field}"] = value
    return out


def load_optimizer_tensors(
    optimizer: torch.optim.Optimizer,
    named_params: Iterable[tuple[str, torch.nn.Parameter]],
    tensors: Mapping[str, torch.Tensor],
) -> None:
    """Inverse of optimizer_tensors; the param groups (lr, betas) come from the new config."""
    saved = optimizer.state_dict()
    state: dict[int, dict[str, torch.Tensor]] = {}
    for index, (name, _) in enumerate(named_params):
        prefix = f"optim.{name}."
        fields = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
        if fields:
            state[index] = fields
    saved["state"] = state
    optimizer.load_state_dict(saved)


def rng_tensors() -> dict[str, torch.Tensor]:
    out = {"rng.torch_cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["rng.torch_cuda"] = torch.cuda.get_rng_state()
    return out


def restore_rng(tensors: Mapping[str, torch.Tensor]) -> None:
    if "rng.torch_cpu" in tensors:
        torch.set_rng_state(tensors["rng.torch_cpu"])
    if "rng.torch_cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.torch_cuda"])
