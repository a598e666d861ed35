"""The reaper: a job whose worker stopped heartbeating is `lost`, and its devices are freed.

Any node's reaper may reap any node's job. Rows are taken with SKIP LOCKED and moved by
job_state.transition under their lock, so concurrent reapers (and a worker finishing the same
job) never both act on one job.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.services.jobs import state as job_state
from gpudeck.services.runs import multinode
from gpudeck.services.runs.lifecycle import ACTIVE


def reap_lost(
    session: Session, lease_s: float, *, still_in_contact: Callable[[], bool] = lambda: True
) -> list[int]:
    """Mark starting/running jobs whose heartbeat is older than the lease `lost`, and jobs
    across nodes one of whose nodes stopped renewing its part (all of their devices are freed).

    `still_in_contact` is asked once the stale rows are locked: if the database was unreachable
    (or paused) while the query waited, "stale" may only mean nobody could heartbeat, so nothing
    is reaped this time."""
    stale = session.scalars(
        select(Job.id)
        .where(
            Job.status.in_(list(ACTIVE)),
            Job.cluster_id.is_(None),  # Slurm's jobs live as long as Slurm says (no worker)
            or_(
                Job.heartbeat_at < func.now() - timedelta(seconds=lease_s),
                multinode.stale_part(lease_s),  # one node of a job across nodes is gone
            ),
        )
        .order_by(Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    if not still_in_contact():
        return []
    for job_id in stale:
        job_state.transition(session, job_id, JobStatus.lost, error=_why(session, job_id, lease_s))
    return list(stale)


def _why(session: Session, job_id: int, lease_s: float) -> str:
    """The cause, naming the node that went silent: the job's own (its first node's) heartbeat,
    or the part of a job across nodes that stopped renewing."""
    silent = multinode.silent_nodes(session, job_id, lease_s)
    job = session.get(Job, job_id)
    nodes = silent or ([job.node] if job is not None else [])
    where = f"node {', '.join(nodes)}: " if nodes else ""
    cause = (
        f"{where}no heartbeat for over {lease_s:g} s: its worker is gone or the machine "
        "stopped answering"
    )
    return multinode.then(cause, multinode.parts(session, job_id))
