"""Reading jobs: one by id, or a page of them. Takes a Session, never commits."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.services.errors import (
    JobNotFound,
)


def get_job(session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise JobNotFound(job_id)
    return job


def list_jobs(
    session: Session, *, statuses: Sequence[str] | None, limit: int, offset: int
) -> tuple[list[Job], int]:
    query = select(Job)
    if statuses:
        query = query.where(Job.status.in_(statuses))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    jobs = session.scalars(query.order_by(Job.id.desc()).limit(limit).offset(offset)).all()
    return list(jobs), total
