"""Reading a job's checkpoints: the rows the worker recorded, checked against the disk.

Paths in rows are relative to the data directory; every path handed out is resolved and must
stay inside it, whatever a row or a request says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.engine import checkpoint_dir
from gpudeck.models import Checkpoint
from gpudeck.services.errors import NotFound

# Before the complete marker (issue 25), the engine wrote these four files into every
# checkpoint, whatever the kind: such a directory, renamed into place whole, is complete too.
PRE_MARKER_FILES = (
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
    """Marked complete (engine/checkpoint_dir.py), or written whole before markers existed."""
    if checkpoint_dir.is_complete(directory):
        return True
    return all((directory / name).is_file() for name in PRE_MARKER_FILES)


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


class CheckpointElsewhere(NotFound):
    """The file is listed, but on another node's disk, which this API cannot read."""

    def __init__(self, job_id: int, row: Checkpoint, name: str) -> None:
        super().__init__(
            message=(
                f"job {job_id}'s checkpoint at step {row.step} is on node {row.node}, in "
                f"{row.node_path}; this API runs on another machine and cannot read it: copy "
                f"{name} from there (or share the data directory between the nodes)"
            ),
            field="checkpoint",
            code="checkpoint_on_another_node",
        )


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
    if path is not None and path.is_file():
        return path
    if row.node is not None and row.node_path is not None:
        raise CheckpointElsewhere(job_id, row, name)
    raise CheckpointNotFound(job_id, f"file {name!r} on disk for step {step}")


@dataclass(frozen=True)
class ListedFile:
    name: str
    size_bytes: int  # as the node that wrote it saw it (or this disk, for older rows)
    here: bool  # on this API's disk, so it can be downloaded from it


def listed_files(data_dir: Path, row: Checkpoint) -> list[ListedFile]:
    """Each file a checkpoint lists, with its size and whether this API's disk holds it."""
    directory = inside(data_dir, row.path)
    reported = row.file_sizes or {}
    files = []
    for name in row.files:
        path = directory / name if directory is not None else None
        here = path is not None and path.is_file()
        size = path.stat().st_size if here and path is not None else reported.get(name, 0)
        files.append(ListedFile(name, int(size), here))
    return files
