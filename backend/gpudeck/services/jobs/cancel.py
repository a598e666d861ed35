"""Cancelling jobs: one, or many in one statement (a sweep's members). Takes a Session, never
commits."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.services.errors import (
    InvalidTransition,
)
from gpudeck.services.jobs import state as job_state


def cancel_job(session: Session, job_id: int) -> Job:
    """A queued job is cancelled at once; a starting or running one is asked to stop, and its
    worker finishes the transition after the final checkpoint. A job already handed to Slurm
    is asked too, even while Slurm keeps it pending: it is `cancelled` once Slurm has ended it
    (scancel), never while Slurm might still start it."""
    job = job_state.lock_job(session, job_id)
    status = JobStatus(job.status)
    if status is JobStatus.queued and job.slurm_job_id is None:
        return job_state.transition(session, job_id, JobStatus.cancelled)
    if status in job_state.TERMINAL:
        raise InvalidTransition(job_id, status, JobStatus.cancelled)
    if job.cancel_requested_at is None:
        job.cancel_requested_at = func.now()
        session.flush()
        session.refresh(job)
    return job


@dataclass(frozen=True)
class Cancelled:
    """What a cancel of many jobs did: ended now (they waited), and asked to stop (running)."""

    ended: list[int]
    stopping: list[int]


def cancel_jobs(session: Session, *where: ColumnElement[bool]) -> Cancelled:
    """cancel_job for every job matching `where` that has not ended (a sweep's members), in a
    few statements whatever their number: all locked at once, the waiting ones cancelled in
    one (job_state.cancel_queued), the starting and running ones asked to stop in another
    (their workers stop them after a final checkpoint, as a single cancel's)."""
    locked = job_state.lock_jobs(session, *where)
    queued = [j for j, status in locked.items() if status is JobStatus.queued]
    in_slurm = set(
        session.scalars(select(Job.id).where(Job.id.in_(queued), Job.slurm_job_id.is_not(None)))
    )
    waiting = [j for j in queued if j not in in_slurm]
    active = [j for j, status in locked.items() if status is not JobStatus.queued or j in in_slurm]
    ended = job_state.cancel_queued(session, waiting)
    if active:
        session.execute(
            update(Job)
            .where(Job.id.in_(active), Job.cancel_requested_at.is_(None))
            .values(cancel_requested_at=func.now()),
            execution_options={"synchronize_session": "fetch"},
        )
    session.flush()
    return Cancelled(ended=ended, stopping=active)
