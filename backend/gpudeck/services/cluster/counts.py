"""The numbers `/metrics` reports besides device readings: jobs by state, live allocations by
node, and who owns the jobs seen on the devices. Queries only; api/metrics_view.py presents them."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Job


def jobs_by_status(session: Session) -> dict[str, int]:
    """Job count per status value; a status no job is in is absent."""
    rows = session.execute(select(Job.status, func.count()).group_by(Job.status))
    return {status: count for status, count in rows}


def live_allocations_by_node(session: Session) -> dict[str, int]:
    """Devices held by jobs (unreleased allocations) per node."""
    rows = session.execute(
        select(Allocation.node, func.count())
        .where(Allocation.released_at.is_(None))
        .group_by(Allocation.node)
    )
    return {node: count for node, count in rows}


def job_owners(session: Session, job_ids: Iterable[int]) -> dict[int, str]:
    ids = set(job_ids)
    if not ids:
        return {}
    rows = session.execute(select(Job.id, Job.owner).where(Job.id.in_(ids)))
    return {job_id: owner for job_id, owner in rows}
