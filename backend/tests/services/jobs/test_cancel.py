"""services/jobs/cancel: a waiting job ends at once and frees what it holds; a starting or running
one is only asked to stop (its worker ends it after a final checkpoint), once; an ended job
refuses. cancel_jobs does the same for many jobs (a sweep's members) and says which it did."""

from __future__ import annotations

import pytest
from harness import make_job
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.services.errors import InvalidTransition, JobNotFound
from gpudeck.services.jobs import cancel

S = JobStatus


def live_allocations(db: Session, job_id: int) -> int:
    query = "SELECT count(*) FROM allocations WHERE job_id = :j AND released_at IS NULL"
    return int(db.scalar(text(query), {"j": job_id}) or 0)


def test_a_queued_job_is_cancelled_at_once_and_frees_its_devices(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    assert live_allocations(db, job.id) == 2
    cancelled = cancel.cancel_job(db, job.id)
    db.commit()
    assert cancelled.status == S.cancelled and cancelled.finished_at is not None
    assert cancelled.cancel_requested_at is None  # nothing to ask: it never ran
    assert live_allocations(db, job.id) == 0


@pytest.mark.parametrize("status", [S.starting, S.running])
def test_an_active_job_is_asked_to_stop_once_and_keeps_its_devices(
    db: Session, devices: str, status: JobStatus
) -> None:
    job = make_job(db, devices=[0], status=status)
    asked = cancel.cancel_job(db, job.id)
    db.commit()
    first = asked.cancel_requested_at
    assert asked.status == status and first is not None
    assert live_allocations(db, job.id) == 1  # its worker frees them when its ranks stop
    again = cancel.cancel_job(db, job.id)  # a second click: the first request stands
    db.commit()
    assert again.status == status and again.cancel_requested_at == first


@pytest.mark.parametrize("ended", [S.succeeded, S.failed, S.cancelled, S.lost])
def test_an_ended_job_refuses_a_cancel_and_is_left_as_it_was(
    db: Session, devices: str, ended: JobStatus
) -> None:
    job = make_job(db, devices=[0], status=ended)
    with pytest.raises(InvalidTransition) as info:
        cancel.cancel_job(db, job.id)
    db.rollback()
    assert info.value.extra == {"current": ended, "target": S.cancelled}
    db.expire_all()
    stored = db.get(Job, job.id)
    assert stored is not None and stored.status == ended and stored.cancel_requested_at is None


def test_cancelling_an_unknown_job_names_it(db: Session) -> None:
    with pytest.raises(JobNotFound, match="job 4242 does not exist"):
        cancel.cancel_job(db, 4242)


def test_cancel_jobs_ends_the_waiting_asks_the_active_and_leaves_the_ended_alone(
    db: Session, devices: str
) -> None:
    waiting = make_job(db, devices=[0])
    starting = make_job(db, devices=[1], status=S.starting)
    running = make_job(db, devices=[2], status=S.running)
    asked_before = make_job(db, devices=[3], status=S.running)
    done = make_job(db, devices=[4], status=S.succeeded)
    earlier = cancel.cancel_job(db, asked_before.id).cancel_requested_at
    db.commit()
    outside = make_job(db, devices=[5])  # not matched by `where`: untouched

    ids = [waiting.id, starting.id, running.id, asked_before.id, done.id]
    result = cancel.cancel_jobs(db, Job.id.in_(ids))
    db.commit()

    assert result.ended == [waiting.id]
    assert result.stopping == [starting.id, running.id, asked_before.id]
    db.expire_all()
    rows = {j.id: j for j in db.query(Job).all()}
    assert rows[waiting.id].status == S.cancelled and live_allocations(db, waiting.id) == 0
    for job_id in (starting.id, running.id):
        assert rows[job_id].cancel_requested_at is not None
        assert live_allocations(db, job_id) == 1
    assert rows[asked_before.id].cancel_requested_at == earlier  # its first request stands
    assert rows[done.id].status == S.succeeded and rows[done.id].cancel_requested_at is None
    assert rows[outside.id].status == S.queued and live_allocations(db, outside.id) == 1


def test_cancel_jobs_matching_nothing_does_nothing(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    result = cancel.cancel_jobs(db, Job.id == job.id + 1)
    db.commit()
    assert result == cancel.Cancelled(ended=[], stopping=[])
    db.expire_all()
    assert db.get(Job, job.id).status == S.queued  # type: ignore[union-attr]
