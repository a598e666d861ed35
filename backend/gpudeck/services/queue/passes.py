"""One scheduling pass over the database: read the state (queue.snapshot), plan over it
(queue.plan), and apply a decision (start, preempt, cancel a job whose dependency failed). Takes
a Session, never commits.

A start goes through `allocation.reserve`, the same insert as an explicit request: the partial
unique index still decides every race."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import (
    exists,
    func,
    select,
)
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, JobStatus
from gpudeck.schemas.jobs import QueueInfo
from gpudeck.services.errors import GpuBusy
from gpudeck.services.jobs import state as job_state
from gpudeck.services.placement.allocation import Chosen, reserve
from gpudeck.services.placement.live_memory import Readings
from gpudeck.services.placement.shared import NoRoomToShare
from gpudeck.services.queue.plan import Plan, Policy, Start, Waiting, plan
from gpudeck.services.queue.snapshot import quotas, run_shares, snapshot, usage_by_owner
from gpudeck.services.queue.waiting import WaitingCache


@dataclass(frozen=True)
class PassResult:
    """One pass over the database's state: its decisions, and what it was taken over (the
    waiting jobs and each owner's fair-share usage, which the queue summary reads)."""

    plan: Plan
    waiting: list[Waiting]
    usage: dict[str, float]


def run_pass(
    session: Session,
    live: Readings | None,
    *,
    half_life_s: float,
    policy: Policy | None = None,
    explain: bool = True,
    cache: WaitingCache | None = None,
) -> PassResult:
    """Read the state (snapshot, usage, quotas) and plan over it: the one read-then-plan
    sequence of the scheduler's pass, the queue view and the queue summary. `explain=False`:
    a deciding-only pass (queue_plan.plan), which needs no run shares."""
    now, devices, holding, waiting = snapshot(session, live, cache)
    usage = usage_by_owner(session, half_life_s)
    decided = plan(
        devices,
        holding,
        waiting,
        now=now,
        usage=usage,
        quotas=quotas(session),
        policy=policy,
        explain=explain,
        run_shares=run_shares(session) if explain else None,
    )
    return PassResult(decided, waiting, usage)


def compute_plan(
    session: Session,
    live: Readings | None,
    *,
    half_life_s: float,
    policy: Policy | None = None,
) -> Plan:
    return run_pass(session, live, half_life_s=half_life_s, policy=policy).plan


def queue_infos(plan_: Plan) -> dict[int, QueueInfo]:
    return {
        job_id: QueueInfo(
            position=info.position,
            reason_code=info.reason_code,
            reason=info.reason,
            expected_start_at=(
                datetime.fromtimestamp(info.expected_start, UTC)
                if info.expected_start is not None
                else None
            ),
            expected_start_from_time_limits=info.from_time_limits,
        )
        for job_id, info in plan_.infos.items()
    }


def start(session: Session, decision: Start) -> bool:
    """Place one job as the pass decided: False when the state moved meanwhile (it was
    cancelled, held, or placed; or another request took a device first: the index said no)."""
    job = job_state.lock_job(session, decision.job_id)
    if job.status != JobStatus.queued or job.held:
        return False
    live = exists().where(Allocation.job_id == job.id, Allocation.released_at.is_(None))
    if session.scalar(select(live)):
        return False
    try:
        reserve(session, job, [Chosen(d.node, d.uuid, d.index) for d in decision.devices])
    except (GpuBusy, NoRoomToShare):
        return False
    # A count spread over nodes learns its nodes now: the first is node rank 0, whose worker
    # claims the job (services.runs.lifecycle.claim_job).
    job.node = decision.devices[0].node
    return True


def preempt(session: Session, victim_id: int, for_job_id: int) -> bool:
    """Ask the worker of a running preemptible job to stop it (SIGTERM, a final checkpoint)
    and queue it again (services.runs.lifecycle.requeue_job); False if it is no longer one to
    stop."""
    job = job_state.lock_job(session, victim_id)
    if job.status != JobStatus.running or not job.preemptible or job.cancel_requested:
        return False
    if job.preempt_requested_at is None:
        job.preempt_requested_at = func.now()
        job.preempted_by_job_id = for_job_id
    return True


def cancel_waiting(session: Session, job_id: int, reason: str) -> bool:
    """Cancel a waiting job whose dependency failed; False if it is no longer waiting."""
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.queued:
        return False
    job_state.transition(session, job_id, JobStatus.cancelled, error=reason)
    return True
