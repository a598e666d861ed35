"""What makes a directory a complete checkpoint: its name `step_<n>` and a marker file in it.

Whoever writes a checkpoint renames it into place whole (the engine's writer, engine/checkpoint.py,
does so with the marker already inside; a script's own directory is marked by the worker once it
has appeared, engine/command_output.py). Completeness is therefore the marker, never a list of
file names: each kind owns the files of its checkpoints, and the engine knows none of them.

Torch-free: the worker and the API read checkpoints without importing torch.
"""

from __future__ import annotations

import re
from pathlib import Path

# Hidden, so that listings of a checkpoint's files (relay, API) leave it out.
COMPLETE_MARKER = ".gpudeck-complete"
_STEP_DIR = re.compile(r"^step_(\d+)$")


def job_checkpoints(data_dir: Path, job_id: int) -> Path:
    """Where job `job_id`'s checkpoints are written, under the data directory: the worker
    gives a job this directory, and a job that reads another's checkpoints (an evaluation)
    finds them here."""
    return data_dir / "checkpoints" / str(job_id)


def step_of(path: Path) -> int | None:
    """n for a directory named `step_<n>`; None for any other name."""
    match = _STEP_DIR.match(path.name)
    return int(match[1]) if match else None


def step_dirs(root: Path) -> list[tuple[int, Path]]:
    """Every `step_<n>` directory under `root`, complete or not, by step (no links)."""
    found = []
    for entry in root.iterdir() if root.is_dir() else ():
        step = step_of(entry)
        if step is not None and entry.is_dir() and not entry.is_symlink():
            found.append((step, entry))
    return sorted(found)


def is_complete(directory: Path) -> bool:
    return (directory / COMPLETE_MARKER).is_file()


def complete_checkpoints(root: Path) -> list[Path]:
    """The complete checkpoints under `root`, oldest first."""
    return [path for _, path in step_dirs(root) if is_complete(path)]
