"""A job's run, as its worker sees it: claim, start, heartbeat, finish. Takes a Session, never
commits; every status change goes through job_state.transition (terminal ones release devices).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, JobStatus
from gpudeck.services import job_state

ACTIVE = (JobStatus.starting, JobStatus.running)


@dataclass(frozen=True)
class LaunchPlan:
    """What a worker needs to start a job's ranks (values only: no session, no ORM objects)."""

    job_id: int
    kind: str
    config: dict[str, Any]
    node: str
    device_indices: list[int]
    device_source: str  # "nvml" | "simulated"
    resume_from_job_id: int | None

    @property
    def world_size(self) -> int:
        return len(self.device_indices)


@dataclass(frozen=True)
class Pulse:
    """One heartbeat's answer for a job: is it still ours to run, and should it stop?"""

    status: JobStatus
    cancel_requested_at: datetime | None


def claim_job(session: Session, job_id: int, node: str) -> LaunchPlan | None:
    """queued -> starting under the row lock; None if the job is not queued on this node.

    The lock makes a second delivery of the same task (a redelivered message, or the start-up
    pick-up racing a dispatch) a no-op: only one worker ever moves a job out of `queued`.
    """
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.queued or job.node != node:
        return None
    job_state.transition(session, job_id, JobStatus.starting)
    rows = session.execute(
        select(Allocation.gpu_index, Device.source)
        .outerjoin(Device, (Device.node == Allocation.node) & (Device.uuid == Allocation.gpu_uuid))
        .where(Allocation.job_id == job_id, Allocation.released_at.is_(None))
        .order_by(Allocation.rank)
    ).all()
    return LaunchPlan(
        job_id=job.id,
        kind=job.kind,
        config=dict(job.config),
        node=job.node,
        device_indices=[index for index, _ in rows],
        device_source=next((source for _, source in rows if source), "simulated"),
        resume_from_job_id=job.resume_from_job_id,
    )


def mark_running(session: Session, job_id: int) -> bool:
    """starting -> running once the ranks exist; False if the job meanwhile left `starting`."""
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.starting:
        return False
    job_state.transition(session, job_id, JobStatus.running)
    return True


def finish_job(
    session: Session, job_id: int, target: JobStatus, *, error: str | None = None
) -> Job | None:
    """Move an active job to a terminal state; None if it already is terminal (e.g. reaped)."""
    job = job_state.lock_job(session, job_id)
    if JobStatus(job.status) in job_state.TERMINAL:
        return None
    return job_state.transition(session, job_id, target, error=error)


def heartbeat(session: Session, job_ids: Sequence[int]) -> dict[int, Pulse]:
    """Renew the lease of the active jobs among `job_ids`; jobs missing from the answer are no
    longer active (finished, or reaped as lost) and must be stopped by their runner."""
    if not job_ids:
        return {}
    rows = session.execute(
        update(Job)
        .where(Job.id.in_(list(job_ids)), Job.status.in_(list(ACTIVE)))
        .values(heartbeat_at=func.now())
        .returning(Job.id, Job.status, Job.cancel_requested_at)
    ).all()
    return {job_id: Pulse(JobStatus(status), cancel_at) for job_id, status, cancel_at in rows}


def queued_job_ids(session: Session, node: str) -> list[int]:
    """Queued jobs of a node, oldest first: picked up by its worker on start."""
    return list(
        session.scalars(
            select(Job.id)
            .where(Job.node == node, Job.status == JobStatus.queued)
            .order_by(Job.created_at, Job.id)
        )
    )
