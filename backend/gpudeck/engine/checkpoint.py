"""Atomic, safetensors-only checkpoints: `<checkpoint_dir>/step_<n>/`.

A checkpoint is written into `.tmp-step_<n>-<pid>/`, every file and the directory fsynced,
then renamed to `step_<n>` and the parent fsynced: a crash at any moment leaves either the
complete directory or none. Nothing here unpickles: weights and optimizer state are
safetensors, the rest JSON.

Files: `sae_weights.safetensors` + `cfg.json` (SAELens's layout for the `sae` kind; other kinds
put their weights there too), `trainer_state.safetensors` (optimizer state, RNG) and
`trainer_state.json` (step, data position, config, world size, versions).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from gpudeck.engine import checkpoint_tmp
from gpudeck.engine.files import fsync_path

WEIGHTS_FILE = "sae_weights.safetensors"
CFG_FILE = "cfg.json"
STATE_TENSORS_FILE = "trainer_state.safetensors"
STATE_JSON_FILE = "trainer_state.json"
CHECKPOINT_FILES = (WEIGHTS_FILE, CFG_FILE, STATE_TENSORS_FILE, STATE_JSON_FILE)
_STEP_DIR = re.compile(r"^step_(\d+)$")


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int
    weights: dict[str, torch.Tensor]
    cfg: dict[str, Any]
    state_tensors: dict[str, torch.Tensor]
    state: dict[str, Any]


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True))


def _contiguous(tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}


def write_checkpoint(
    checkpoint_dir: str | Path,
    step: int,
    *,
    weights: Mapping[str, torch.Tensor],
    cfg: Mapping[str, Any],
    state_tensors: Mapping[str, torch.Tensor],
    state: Mapping[str, Any],
    keep: int,
    extra_tensor_files: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
) -> Path:
    """Write step_<step> atomically, then keep only the newest `keep` checkpoints.

    `extra_tensor_files` (file name: tensors) are written beside the others, inside the same
    atomic rename (the `sae` kind's sparsity.safetensors); a checkpoint is complete without
    them."""
    root = Path(checkpoint_dir)
    root.mkdir(parents=True, exist_ok=True)
    checkpoint_tmp.remove_partial(root)  # left by a writer that died
    tmp = checkpoint_tmp.write_dir(root, step)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    save_file(_contiguous(weights), tmp / WEIGHTS_FILE)
    _write_json(tmp / CFG_FILE, cfg)
    save_file(_contiguous(state_tensors), tmp / STATE_TENSORS_FILE)
    _write_json(tmp / STATE_JSON_FILE, state)
    extra = dict(extra_tensor_files or {})
    for name, tensors in extra.items():
        save_file(_contiguous(tensors), tmp / name)
    for name in (*CHECKPOINT_FILES, *extra):
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


def _step_dirs(root: Path) -> list[tuple[int, Path]]:
    found = []
    for entry in root.iterdir() if root.is_dir() else ():
        match = _STEP_DIR.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def _is_complete(path: Path) -> bool:
    return all((path / name).is_file() for name in CHECKPOINT_FILES)


def prune_checkpoints(root: Path, keep: int) -> None:
    complete = [path for _, path in _step_dirs(root) if _is_complete(path)]
    for path in complete[: max(0, len(complete) - max(1, keep))]:
        _discard(root, path)


def list_checkpoints(checkpoint_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    return [path for _, path in _step_dirs(Path(checkpoint_dir)) if _is_complete(path)]


def latest_checkpoint(checkpoint_dir: str | Path) -> Path | None:
    """The newest complete step_<n> dir; temporary and partial dirs are ignored."""
    complete = list_checkpoints(checkpoint_dir)
    return complete[-1] if complete else None


def load_checkpoint(path: str | Path) -> Checkpoint:
    path = Path(path)
    state = json.loads((path / STATE_JSON_FILE).read_text())
    return Checkpoint(
        path=path,
        step=int(state["step"]),
        weights=load_file(path / WEIGHTS_FILE),
        cfg=json.loads((path / CFG_FILE).read_text()),
        state_tensors=load_file(path / STATE_TENSORS_FILE),
        state=state,
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
