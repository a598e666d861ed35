"""Reading jobs: one by id, or a page of them. Takes a Session, never commits."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import String, cast, func, or_, select
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
    session: Session,
    *,
    statuses: Sequence[str] | None,
    limit: int,
    offset: int,
    tags: Sequence[str] = (),
    search: str = "",
    ids: Sequence[int] = (),
) -> tuple[list[Job], int]:
    """Newest first: those of `statuses`, carrying every one of `tags`, whose name, kind, tags or
    notes contain `search` (any case), among `ids` where given."""
    query = select(Job)
    if statuses:
        query = query.where(Job.status.in_(statuses))
    if tags:
        query = query.where(Job.tags.contains(list(tags)))  # JSONB @>: the GIN index answers
    if ids:
        query = query.where(Job.id.in_(ids))
    if search.strip():
        pattern = f"%{_escape_like(search.strip())}%"
        fields = (Job.name, Job.kind, Job.notes, cast(Job.tags, String))
        query = query.where(or_(*(f.ilike(pattern, escape="\\") for f in fields)))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    jobs = session.scalars(query.order_by(Job.id.desc()).limit(limit).offset(offset)).all()
    return list(jobs), total


def _escape_like(text: str) -> str:
    """`50%` searches for those three characters, not for "50" and anything after."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
