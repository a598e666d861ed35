"""Resume (services/submit/resume.py): a new job that continues an ended one from its newest
complete checkpoint, once, on the same devices when they are free (else as many on its node);
refused for a job still running, one without a complete checkpoint, one already resumed, and a
training job that ran all its steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.engine.checkpoint_dir import COMPLETE_MARKER
from gpudeck.models import Checkpoint, Job, JobStatus
from gpudeck.schemas.job_runs import JobResume
from gpudeck.services.errors import InvalidTransition, JobNotFound
from gpudeck.services.submit.resume import NothingToResume, NotResumable, resume_job


def _ended(db: Session, status: JobStatus, devices: list[int]) -> Job:
    """A job that ran on `devices` and ended: its devices given back, as the worker does."""
    job = make_job(db, devices=devices, status=status)
    db.execute(
        text("UPDATE allocations SET released_at = now() WHERE job_id = :id"), {"id": job.id}
    )
    db.commit()
    db.refresh(job)
    return job


def _checkpoint(db: Session, job: Job, data_dir: Path, step: int, *, complete: bool) -> None:
    relative = f"checkpoints/{job.id}/step_{step}"
    (data_dir / relative).mkdir(parents=True)
    if complete:
        (data_dir / relative / COMPLETE_MARKER).write_bytes(b"")
    db.add(Checkpoint(job_id=job.id, step=step, path=relative, size_bytes=1, files=[]))
    db.commit()


def _resume(
    db: Session, job_id: int, data_dir: Path, request: JobResume | None = None, **kw: bool
) -> Job:
    resumed = resume_job(
        db, job_id, request or JobResume(), owner="tester", data_dir=data_dir, **kw
    )
    db.commit()
    return resumed


def _held(job: Job) -> list[int]:
    return [a.gpu_index for a in sorted(job.allocations, key=lambda a: a.rank)]


def test_a_failed_job_continues_as_a_new_job_on_its_own_devices(
    db: Session, devices: str, tmp_path: Path
) -> None:
    source = _ended(db, JobStatus.failed, [3, 1])
    _checkpoint(db, source, tmp_path, 5, complete=True)
    resumed = _resume(db, source.id, tmp_path)
    assert resumed.id != source.id and resumed.resume_from_job_id == source.id
    assert (resumed.kind, resumed.config) == (source.kind, source.config)
    assert resumed.name == f"{source.name}-resume"
    assert _held(resumed) == [3, 1]  # the same devices, in the same rank order


def test_with_its_devices_taken_it_resumes_on_as_many_of_its_node(
    db: Session, devices: str, tmp_path: Path
) -> None:
    source = _ended(db, JobStatus.cancelled, [0, 1])
    _checkpoint(db, source, tmp_path, 5, complete=True)
    make_job(db, devices=[0])  # took one of them meanwhile
    resumed = _resume(db, source.id, tmp_path)
    assert len(_held(resumed)) == 2 and 0 not in _held(resumed)
    assert resumed.node == TEST_NODE


def test_a_request_names_where_and_what_it_is_called(
    db: Session, devices: str, tmp_path: Path
) -> None:
    source = _ended(db, JobStatus.timeout, [0, 1])
    _checkpoint(db, source, tmp_path, 5, complete=True)
    request = JobResume.model_validate(
        {
            "devices": [{"node": TEST_NODE, "index": 6}, {"node": TEST_NODE, "index": 7}],
            "name": "again",
        }
    )
    resumed = _resume(db, source.id, tmp_path, request)
    assert _held(resumed) == [6, 7] and resumed.name == "again"


def test_a_resume_that_may_not_start_now_waits_holding_nothing(
    db: Session, devices: str, tmp_path: Path
) -> None:
    source = _ended(db, JobStatus.lost, [0])
    _checkpoint(db, source, tmp_path, 5, complete=True)
    resumed = _resume(db, source.id, tmp_path, may_start_now=False)  # a sweep's member
    assert resumed.status == JobStatus.queued and resumed.allocations == []


def test_only_a_complete_checkpoint_can_be_resumed_from(
    db: Session, devices: str, tmp_path: Path
) -> None:
    source = _ended(db, JobStatus.failed, [0])
    with pytest.raises(NothingToResume) as none:
        _resume(db, source.id, tmp_path)
    db.rollback()
    assert (none.value.code, none.value.field) == ("no_checkpoint", "job_id")
    _checkpoint(db, source, tmp_path, 5, complete=False)  # written part way: not a checkpoint
    with pytest.raises(NothingToResume):
        _resume(db, source.id, tmp_path)
    db.rollback()
    _checkpoint(db, source, tmp_path, 3, complete=True)  # an older complete one will do
    assert _resume(db, source.id, tmp_path).resume_from_job_id == source.id


def test_a_job_is_resumed_once_and_only_once_it_has_ended(
    db: Session, devices: str, tmp_path: Path
) -> None:
    running = make_job(db, devices=[4], status=JobStatus.running)
    with pytest.raises(InvalidTransition):
        _resume(db, running.id, tmp_path)
    db.rollback()
    with pytest.raises(JobNotFound):
        _resume(db, running.id + 100, tmp_path)
    db.rollback()
    source = _ended(db, JobStatus.failed, [0])
    _checkpoint(db, source, tmp_path, 5, complete=True)
    first = _resume(db, source.id, tmp_path)
    with pytest.raises(NotResumable) as again:  # a second would fork its run
        _resume(db, source.id, tmp_path)
    db.rollback()
    assert again.value.code == "not_resumable"
    assert f"by job {first.id}" in again.value.message


def test_a_training_job_that_succeeded_is_run_again_not_resumed(
    db: Session, devices: str, tmp_path: Path
) -> None:
    source = _ended(db, JobStatus.succeeded, [0])
    _checkpoint(db, source, tmp_path, 10, complete=True)
    with pytest.raises(NotResumable, match="succeeded: it ran all its steps"):
        _resume(db, source.id, tmp_path)
    db.rollback()
    assert db.scalar(text("SELECT count(*) FROM jobs")) == 1  # nothing was created
