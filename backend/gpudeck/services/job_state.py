"""The job state machine: the one place where a job's status changes.

    queued -> starting -> running -> succeeded | failed | cancelled | lost

A queued job may also be cancelled (nobody started it) or fail (it could not be dispatched),
and a starting one may fail, be cancelled or be lost. Any other move raises InvalidTransition.
A terminal transition releases the job's allocations in the same transaction, so there is no
moment at which a finished job still holds a device.
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Job, JobStatus
from gpudeck.services.errors import InvalidTransition, JobNotFound

S = JobStatus
TERMINAL = frozenset({S.succeeded, S.failed, S.cancelled, S.lost})
ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    S.queued: frozenset({S.starting, S.cancelled, S.failed}),
    S.starting: frozenset({S.running, S.failed, S.cancelled, S.lost}),
    S.running: frozenset({S.succeeded, S.failed, S.cancelled, S.lost}),
    S.succeeded: frozenset(),
    S.failed: frozenset(),
    S.cancelled: frozenset(),
    S.lost: frozenset(),
}


def can_transition(current: JobStatus, target: JobStatus) -> bool:
    return target in ALLOWED[current]


def lock_job(session: Session, job_id: int) -> Job:
    """Load a job with its row locked, so two writers (worker, cancel, reaper) serialise."""
    job = session.scalar(select(Job).where(Job.id == job_id).with_for_update())
    if job is None:
        raise JobNotFound(job_id)
    return job


def transition(
    session: Session, job_id: int, target: JobStatus, *, error: str | None = None
) -> Job:
    job = lock_job(session, job_id)
    current = JobStatus(job.status)
    if not can_transition(current, target):
        raise InvalidTransition(job_id, current, target)
    job.status = target
    if target is S.starting:
        job.heartbeat_at = func.now()
    elif target is S.running:
        job.started_at = func.now()
        job.heartbeat_at = func.now()
    if error is not None:
        job.error = error
    if target in TERMINAL:
        job.finished_at = func.now()
        release_allocations(session, job_id)
    session.flush()
    session.refresh(job)
    return job


def release_allocations(session: Session, job_id: int) -> None:
    session.execute(
        update(Allocation)
        .where(Allocation.job_id == job_id, Allocation.released_at.is_(None))
        .values(released_at=func.now())
    )
