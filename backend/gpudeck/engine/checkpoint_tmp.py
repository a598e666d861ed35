"""Temporary directories of checkpoint writers (`.tmp-*` under a job's checkpoint dir).

A checkpoint is written into `.tmp-step_<n>-<pid>/` and renamed when complete; a pruned one is
renamed to `.tmp-delete-...` before removal. A writer killed mid-way leaves such a directory
behind. Torch-free, so the worker can clean up once a job's ranks are gone.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)
TMP_PREFIX = ".tmp-"


def write_dir(root: Path, step: int) -> Path:
    return root / f"{TMP_PREFIX}step_{step}-{os.getpid()}"


def delete_dir(root: Path, name: str) -> Path:
    return root / f"{TMP_PREFIX}delete-{name}-{os.getpid()}"


def remove_partial(root: Path) -> int:
    """Remove every temporary dir under `root`; only call it when no writer of `root` runs
    (only rank 0 of one job writes there). Returns how many were removed."""
    removed = 0
    for entry in root.glob(f"{TMP_PREFIX}*") if root.is_dir() else ():
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
    if removed:
        log.info("removed %d partial checkpoint dir(s) under %s", removed, root)
    return removed
