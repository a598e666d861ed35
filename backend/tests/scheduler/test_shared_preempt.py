"""Preemption that counts sharing, through the scheduler's real pass over Postgres: a waiting
exclusive job of higher priority stops the two preemptible sharing jobs on a device (never the
non-preemptible one beside another job on the other device), and starts on that device only
once both have released it (each stopped as any victim: its segment "preempted by job N")."""

from __future__ import annotations

from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.scheduler.duties import Context, schedule_queue
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.submit import submission
from gpudeck.services.submit.checks import Submitter

GiB = 1024**3


def _running_share(db: Session, index: int, *, preemptible: bool) -> Job:
    """A sharing job placed on device `index` at submit, claimed and running."""
    spec = JobCreate.model_validate(
        {
            "kind": "script",
            "config": {"entrypoint": "train.py", "memory_per_device_bytes": 10 * GiB},
            "devices": [{"index": index, "node": TEST_NODE}],
            "share": "memory",
            "preemptible": preemptible,
        }
    )
    job = submission.create_job(db, spec, owner="ada")
    assert runs.claim_job(db, job.id, TEST_NODE) is not None  # placed at once: room for it
    assert runs.mark_running(db, job.id)
    db.commit()
    return job


def _live(db: Session) -> dict[int, list[int]]:
    """Each job's devices held now."""
    rows = db.execute(
        text("SELECT job_id, gpu_index FROM allocations WHERE released_at IS NULL")
    ).all()
    db.rollback()
    held: dict[int, list[int]] = {}
    for job_id, index in rows:
        held.setdefault(job_id, []).append(index)
    return held


def _stopping(db: Session) -> dict[int, int | None]:
    """Each job asked to stop, and for whom."""
    rows = db.execute(
        text("SELECT id, preempted_by_job_id FROM jobs WHERE preempt_requested_at IS NOT NULL")
    ).all()
    db.rollback()
    return {job_id: by for job_id, by in rows}


def test_an_exclusive_job_preempts_both_sharing_jobs_of_a_device_and_starts_once_released(
    scheduler: Context, db: Session
) -> None:
    register_devices(db, "2x80GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    db.commit()
    first, second = (_running_share(db, 0, preemptible=True) for _ in range(2))
    kept = _running_share(db, 1, preemptible=False)  # its device holds a job it may not stop
    beside = _running_share(db, 1, preemptible=True)
    spec = JobCreate.model_validate(
        {"kind": "sae", "config": {"steps": 10, "batch_size": 64}, "count": 1,
         "node": TEST_NODE, "priority": 5}
    )  # fmt: skip
    urgent = submission.create_job(db, spec, owner=Submitter("boss", is_admin=True))
    db.commit()
    assert _live(db).get(urgent.id) is None  # every device is shared: it waits

    assert schedule_queue(scheduler) == []
    assert _stopping(db) == {first.id: urgent.id, second.id: urgent.id}  # not kept, not beside
    assert runs.requeue_job(db, first.id) is not None  # its worker stopped it
    db.commit()
    assert schedule_queue(scheduler) == []  # the other still holds device 0: nothing starts there
    assert urgent.id not in _live(db) and second.id in _live(db)
    assert runs.requeue_job(db, second.id) is not None
    db.commit()

    assert schedule_queue(scheduler) == [urgent.id]
    held = _live(db)
    assert held[urgent.id] == [0] and held[kept.id] == [1] and held[beside.id] == [1]
    assert first.id not in held and second.id not in held  # they wait to resume
    for victim in (first, second):
        segment = runs.segments(db, victim.id)[-1]
        assert (segment.outcome, segment.reason) == ("preempted", f"preempted by job {urgent.id}")
    db.rollback()
    assert kept.id not in _stopping(db) and beside.id not in _stopping(db)
