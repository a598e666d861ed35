"""What users and admins do to waiting jobs: hold, release, change priority; and quotas.
Takes a Session, never commits; each change wakes the scheduler when it commits."""

from __future__ import annotations

from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus, UserQuota
from gpudeck.schemas.quotas import QuotaUpdate
from gpudeck.services.errors import Conflict, Forbidden, InvalidTransition
from gpudeck.services.jobs import state as job_state


def _queued(session: Session, job_id: int, action: str) -> Job:
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.queued:
        raise InvalidTransition(job_id, job.status, action)
    return job


def set_held(session: Session, job_id: int, held: bool) -> Job:
    """Hold (it will not start) or release a queued job. A job already placed on devices
    cannot be held any more: it is starting."""
    job = _queued(session, job_id, "held" if held else "released")
    if held and job.allocations:
        raise Conflict(
            message=f"job {job_id} already has its devices and is starting; cancel it instead",
            field="status",
            code="already_placed",
        )
    job.held = held
    job_state.wake_scheduler(session)
    session.flush()
    session.refresh(job)
    return job


def set_priority(session: Session, job_id: int, priority: int, *, is_admin: bool) -> Job:
    """Owners may lower their job's priority; only an admin may raise it."""
    job = job_state.lock_job(session, job_id)
    if priority > job.priority and not is_admin:
        raise Forbidden(
            f"only an admin may raise a job's priority (it is {job.priority})", field="priority"
        )
    if JobStatus(job.status) in job_state.TERMINAL:
        raise InvalidTransition(job_id, job.status, "reprioritised")
    job.priority = priority
    job_state.wake_scheduler(session)
    session.flush()
    session.refresh(job)
    return job


def get_quota(session: Session, user_name: str) -> UserQuota:
    return session.get(UserQuota, user_name) or UserQuota(
        user_name=user_name, max_devices=None, max_queued_jobs=None
    )


def set_quota(session: Session, user_name: str, update: QuotaUpdate) -> UserQuota:
    quota = session.get(UserQuota, user_name)
    if quota is None:
        quota = UserQuota(user_name=user_name)
        session.add(quota)
    quota.max_devices = update.max_devices
    quota.max_queued_jobs = update.max_queued_jobs
    job_state.wake_scheduler(session)
    session.flush()
    return quota
