"""The reaper: a job whose worker stopped heartbeating is `lost`, and its devices are freed.

Any node's reaper may reap any node's job. Rows are taken with SKIP LOCKED and moved by
job_state.transition under their lock, so concurrent reapers (and a worker finishing the same
job) never both act on one job.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.services import job_state
from gpudeck.services.runs import ACTIVE


def reap_lost(session: Session, lease_s: float) -> list[int]:
    """Mark starting/running jobs whose heartbeat is older than the lease `lost`."""
    stale = session.scalars(
        select(Job.id)
        .where(
            Job.status.in_(list(ACTIVE)),
            Job.heartbeat_at < func.now() - timedelta(seconds=lease_s),
        )
        .order_by(Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    for job_id in stale:
        job_state.transition(
            session,
            job_id,
            JobStatus.lost,
            error=f"no heartbeat for over {lease_s:g} s: its worker is gone",
        )
    return list(stale)
