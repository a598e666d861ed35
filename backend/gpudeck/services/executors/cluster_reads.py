"""How the reads of a cluster's nodes went: when Slurm last answered one and since when it has
not, kept on the cluster's row so every API process (and a restarted one) tells the same story.
Takes a Session, never commits."""

from __future__ import annotations

from sqlalchemy import func, update
from sqlalchemy.orm import Session

from gpudeck.models import Cluster
from gpudeck.schemas.clusters import ClusterState


def record_read(session: Session, cluster_id: int, state: ClusterState) -> ClusterState:
    """`state` with the cluster's last answer and first unanswered read, once this read is
    counted: an answer clears `unreachable_since`; a silence keeps the first one's time."""
    ok = state.reachable
    at = state.read_at
    row = session.execute(
        update(Cluster)
        .where(Cluster.id == cluster_id)
        .values(
            # Two reads may finish out of order: the answer that counts is the newest.
            answered_at=func.greatest(Cluster.answered_at, at) if ok else Cluster.answered_at,
            unreachable_since=None if ok else func.coalesce(Cluster.unreachable_since, at),
        )
        .returning(Cluster.answered_at, Cluster.unreachable_since)
    ).one_or_none()
    session.flush()
    if row is None:  # removed while Slurm was asked
        return state
    return state.model_copy(update={"answered_at": row[0], "unreachable_since": row[1]})
