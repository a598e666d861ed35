"""Reading a job's checkpoints: the rows the worker recorded, checked against the disk.

Paths in rows are relative to the data directory; every path handed out is resolved and must
stay inside it, whatever a row or a request says.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.engine.command_output import COMPLETE_MARKER
from gpudeck.models import Checkpoint
from gpudeck.services.errors import NotFound

# What makes a step directory a complete checkpoint (the trainer renames it into place whole).
REQUIRED_FILES = (
    "sae_weights.safetensors",
    "cfg.json",
    "trainer_state.safetensors",
    "trainer_state.json",
)


class CheckpointNotFound(NotFound):
    def __init__(self, job_id: int, what: str) -> None:
        super().__init__(
            message=f"job {job_id} has no {what}",
            field="checkpoint",
            code="checkpoint_not_found",
        )


def inside(data_dir: Path, relative: str) -> Path | None:
    """`data_dir / relative`, resolved; None if it would lead outside the data directory."""
    root = data_dir.resolve()
    candidate = (root / relative).resolve()
    return candidate if candidate.is_relative_to(root) and candidate != root else None


def is_complete(directory: Path) -> bool:
    # A command job's (`script`) checkpoint holds the script's own files: the worker marks it
    # complete once it was renamed into place (engine/command_output.py).
    if (directory / COMPLETE_MARKER).is_file():
        return True
    return all((directory / name).is_file() for name in REQUIRED_FILES)


def list_checkpoints(session: Session, job_id: int) -> list[Checkpoint]:
    """Live (not pruned) checkpoints of a job, oldest first."""
    return list(
        session.scalars(
            select(Checkpoint)
            .where(Checkpoint.job_id == job_id, Checkpoint.deleted_at.is_(None))
            .order_by(Checkpoint.step)
        )
    )


def newest_complete(session: Session, job_id: int, data_dir: Path) -> Path | None:
    """The newest checkpoint of a job whose directory is on disk and complete."""
    for row in reversed(list_checkpoints(session, job_id)):
        directory = inside(data_dir, row.path)
        if directory is not None and is_complete(directory):
            return directory
    return None


def checkpoint_file(session: Session, job_id: int, step: int, name: str, data_dir: Path) -> Path:
    """The file `name` of a job's checkpoint at `step`; only files the row lists are served."""
    row = session.scalar(
        select(Checkpoint).where(
            Checkpoint.job_id == job_id, Checkpoint.step == step, Checkpoint.deleted_at.is_(None)
        )
    )
    if row is None:
        raise CheckpointNotFound(job_id, f"checkpoint at step {step}")
    if name not in row.files:
        raise CheckpointNotFound(job_id, f"file {name!r} in its checkpoint at step {step}")
    path = inside(data_dir, f"{row.path}/{name}")
    if path is None or not path.is_file():
        raise CheckpointNotFound(job_id, f"file {name!r} on disk for step {step}")
    return path


def file_sizes(data_dir: Path, row: Checkpoint) -> dict[str, int]:
    """Each listed file of a checkpoint with its size on disk (0 if it has gone)."""
    directory = inside(data_dir, row.path)
    sizes = {}
    for name in row.files:
        path = directory / name if directory is not None else None
        sizes[name] = path.stat().st_size if path is not None and path.is_file() else 0
    return sizes
