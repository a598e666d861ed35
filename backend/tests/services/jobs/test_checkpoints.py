"""Which checkpoints count as complete: marked ones, whatever files their kind wrote, and ones
written whole before the marker existed (the engine's four files then); never a partial one."""

from __future__ import annotations

from pathlib import Path

from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.engine.checkpoint_dir import COMPLETE_MARKER
from gpudeck.models import Checkpoint
from gpudeck.services.jobs import checkpoints

PRE_MARKER = (
    "sae_weights.safetensors",
    "cfg.json",
    "trainer_state.safetensors",
    "trainer_state.json",
)


def _step_dir(root: Path, step: int, names: tuple[str, ...]) -> Path:
    directory = root / f"step_{step}"
    directory.mkdir(parents=True)
    for name in names:
        (directory / name).write_bytes(b"x")
    return directory


def test_a_marked_directory_is_complete_whatever_its_files(tmp_path: Path) -> None:
    assert checkpoints.is_complete(_step_dir(tmp_path, 1, ("linreg.json", COMPLETE_MARKER)))
    assert not checkpoints.is_complete(_step_dir(tmp_path, 2, ("linreg.json",)))
    assert not checkpoints.is_complete(_step_dir(tmp_path, 3, ()))


def test_a_checkpoint_written_before_the_marker_still_counts(tmp_path: Path) -> None:
    assert checkpoints.is_complete(_step_dir(tmp_path, 1, PRE_MARKER))
    assert not checkpoints.is_complete(_step_dir(tmp_path, 2, PRE_MARKER[:3]))


def test_newest_complete_skips_partial_and_takes_old_layouts(
    db: Session, devices: str, tmp_path: Path
) -> None:
    job = make_job(db, devices=[0])
    root = tmp_path / "checkpoints" / str(job.id)
    layouts = {
        10: PRE_MARKER,
        20: ("model.safetensors", COMPLETE_MARKER),
        30: ("model.safetensors",),
    }
    for step, names in layouts.items():
        _step_dir(root, step, names)
        relative = f"checkpoints/{job.id}/step_{step}"
        db.add(Checkpoint(job_id=job.id, step=step, path=relative, size_bytes=1, files=list(names)))
    db.flush()
    assert checkpoints.newest_complete(db, job.id, tmp_path) == root / "step_20"
    (root / "step_20" / COMPLETE_MARKER).unlink()
    assert checkpoints.newest_complete(db, job.id, tmp_path) == root / "step_10"
