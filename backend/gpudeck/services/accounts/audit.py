"""The audit trail: one row per security-relevant action. Takes a Session, never commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from gpudeck.core.security import Principal
from gpudeck.models import AuditEvent

# The actions recorded; a test checks that each one is written where it happens.
SIGN_IN = "auth.sign_in"
JOB_SUBMIT = "job.submit"
JOB_CANCEL = "job.cancel"
JOB_RESUME = "job.resume"
JOB_HOLD = "job.hold"
JOB_RELEASE = "job.release"
JOB_PRIORITY = "job.priority"
SWEEP_SUBMIT = "sweep.submit"
SWEEP_CANCEL = "sweep.cancel"
SWEEP_MAX_PARALLEL = "sweep.max_parallel"
QUOTA_SET = "quota.set"
USER_CREATE = "user.create"
USER_UPDATE = "user.update"
TOKEN_CREATE = "token.create"
TOKEN_REVOKE = "token.revoke"
DATASET_UPLOAD = "dataset.upload"
CLUSTER_ADD = "cluster.add"
CLUSTER_REMOVE = "cluster.remove"


def record(
    session: Session,
    actor: Principal | str,
    action: str,
    target: str | None = None,
    *,
    remote_addr: str | None = None,
    **detail: Any,
) -> AuditEvent:
    event = AuditEvent(
        actor=actor if isinstance(actor, str) else actor.name,
        action=action,
        target=target,
        detail=detail,
        remote_addr=remote_addr,
    )
    session.add(event)
    session.flush()
    return event


def record_many(
    session: Session, actor: Principal | str, action: str, targets: Sequence[str], **detail: Any
) -> None:
    """One row per target, as `record` writes each, inserted in one statement (a sweep's
    cancel: a row per member it cancelled)."""
    if not targets:
        return
    name = actor if isinstance(actor, str) else actor.name
    session.execute(
        insert(AuditEvent),
        [{"actor": name, "action": action, "target": t, "detail": detail} for t in targets],
    )


def list_events(
    session: Session, *, action: str | None, limit: int, offset: int
) -> tuple[list[AuditEvent], int]:
    query = select(AuditEvent)
    if action:
        query = query.where(AuditEvent.action == action)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    events = session.scalars(query.order_by(AuditEvent.id.desc()).limit(limit).offset(offset))
    return list(events), total
