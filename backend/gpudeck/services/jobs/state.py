"""The job state machine: the one place where a job's status changes.

    queued -> starting -> running -> succeeded | failed | cancelled | lost | timeout
                                     | stopped_early (a sweep's rule stopped it, as a cancel)
                                  -> queued (preempted: it waits again, to resume)

A queued job may also be cancelled (nobody started it, or a dependency failed; a job whose
dispatch failed waits for the scheduler's outbox, it does not fail), and a starting one may
fail, be cancelled or be lost. A running job that reaches its time limit ends `timeout`; a
preemptible one stopped for a higher-priority job goes back to `queued` (preemption).
Any other move raises InvalidTransition. Many waiting jobs at once (a sweep's members) are
cancelled by cancel_queued: one statement, the same effects.
A terminal transition releases the job's allocations in the same transaction, and wakes the
scheduler when it commits (devices are free for the next queued job); for a job across nodes,
only those of the nodes whose ranks are known gone (release_ended: the others follow when their
node confirms, or its lease has passed).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, exists, func, select, text, update
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Job, JobNode, JobRun, JobStatus
from gpudeck.services.errors import InvalidTransition, JobNotFound

S = JobStatus
TERMINAL = frozenset({S.succeeded, S.failed, S.cancelled, S.lost, S.timeout, S.stopped_early})
ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    S.queued: frozenset({S.starting, S.cancelled}),
    S.starting: frozenset({S.running, S.failed, S.cancelled, S.lost, S.stopped_early}),
    S.running: frozenset(
        {S.queued, S.succeeded, S.failed, S.cancelled, S.lost, S.timeout, S.stopped_early}
    ),
    S.succeeded: frozenset(),
    S.failed: frozenset(),
    S.cancelled: frozenset(),
    S.lost: frozenset(),
    S.timeout: frozenset(),
    S.stopped_early: frozenset(),
}
# Postgres delivers a NOTIFY when its transaction commits, and never for a rolled-back one:
# the scheduler hears of freed devices exactly when they are free.
WAKE_CHANNEL = "gpudeck_scheduler"
# The payload of a wake-up for a job that only arrived: the scheduler coalesces these (a burst
# of submits is one pass, not hundreds); every other wake-up (devices freed, hold, release,
# priority, quota) runs a pass at once.
WAKE_ARRIVAL = "arrival"
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")


def can_transition(current: JobStatus, target: JobStatus) -> bool:
    return target in ALLOWED[current]


def lock_job(session: Session, job_id: int) -> Job:
    """Load a job with its row locked, so two writers (worker, cancel, reaper) serialise.

    `populate_existing` overwrites a copy already in the session (the API loads the job to
    check its owner before it locks it): deciding on that stale copy let a cancel free the
    devices of a job the worker had claimed meanwhile, while its ranks were starting."""
    job = session.scalar(
        select(Job)
        .where(Job.id == job_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if job is None:
        raise JobNotFound(job_id)
    return job


def transition(
    session: Session, job_id: int, target: JobStatus, *, error: str | None = None
) -> Job:
    job = lock_job(session, job_id)
    current = JobStatus(job.status)
    if target is S.cancelled and job.early_stopped_at is not None and current is not S.queued:
        target = S.stopped_early  # the cancel its sweep's early-stopping rule asked for
    if not can_transition(current, target):
        raise InvalidTransition(job_id, current, target)
    job.status = target
    if target is S.starting:
        job.heartbeat_at = func.now()
    elif target is S.running:
        job.started_at = func.now()
        job.heartbeat_at = func.now()
        session.add(JobRun(job_id=job_id, started_at=func.now()))
    if current is S.running:
        preempted = target is S.queued
        _end_run(
            session, job, "preempted" if preempted else target.value, error if preempted else None
        )
    if error is not None and target is not S.queued:
        job.error = error
    if target in TERMINAL:
        job.finished_at = func.now()
    if target in TERMINAL:
        release_ended(session, job_id)
        wake_scheduler(session)
    elif target is S.queued:
        release_allocations(session, job_id)
        wake_scheduler(session)
    session.flush()
    session.refresh(job)
    return job


def lock_jobs(session: Session, *where: ColumnElement[bool]) -> dict[int, JobStatus]:
    """Lock every job matching `where` that has not ended, in one statement and in id order,
    and return each one's status as it is under its lock (a row another writer moved while
    this waited is read again: a member a worker claimed meanwhile comes back `starting`, one
    that ended is left out). Until the caller commits, no worker claims them, no scheduler
    starts them and none ends: what is decided on these statuses stays true."""
    rows = session.execute(
        select(Job.id, Job.status)
        .where(Job.status.not_in(TERMINAL), *where)
        .order_by(Job.id)
        .with_for_update()
    )
    return {job_id: JobStatus(status) for job_id, status in rows}


def cancel_queued(session: Session, job_ids: Sequence[int]) -> list[int]:
    """queued -> cancelled for many jobs in one statement (a sweep's waiting members), with
    what transition() does for each: ended now, the devices of any the scheduler had placed
    (no worker had claimed them) released, and one wake-up for all. The caller holds their
    row locks (lock_jobs), so a worker's claim or the scheduler's start that waits on them
    finds them cancelled. Returns the ids it ended (those still queued)."""
    if not job_ids:
        return []
    ended = list(
        session.scalars(
            update(Job)
            .where(Job.id.in_(job_ids), Job.status == S.queued)
            .values(status=S.cancelled, finished_at=func.now())
            .returning(Job.id),
            execution_options={"synchronize_session": "fetch"},
        )
    )
    if ended:
        release_ended_many(session, ended)
        wake_scheduler(session)
    return ended


def _end_run(session: Session, job: Job, outcome: str, reason: str | None) -> None:
    """Close the job's open segment (docs/scheduler.md: a preempted job has one per start)."""
    session.execute(
        update(JobRun)
        .where(JobRun.job_id == job.id, JobRun.ended_at.is_(None))
        .values(ended_at=func.now(), outcome=outcome, reason=reason, last_step=job.progress_step)
    )


def release_ended(session: Session, job_id: int) -> None:
    """The devices of a job that just ended that no process of it can use any more.

    On one node: all of them (its worker ended it once its ranks were gone, or the reaper once
    its lease had passed). Across nodes (Slurm's *completing*): those of the parts that finished
    or were never claimed; a claimed part still running keeps its devices, shown *releasing*,
    until its node's worker has killed its ranks and confirms (multinode.confirm_part), or its
    part's lease has passed (reaper.release_silent_parts): another job's ranks never start on
    a device while this job's may still run there."""
    release_ended_many(session, [job_id])


def release_ended_many(session: Session, job_ids: Sequence[int]) -> None:
    """release_ended for many jobs in one statement."""
    still_running = exists().where(
        JobNode.job_id == Allocation.job_id,
        JobNode.node == Allocation.node,
        JobNode.claimed_at.is_not(None),
        JobNode.finished_at.is_(None),
    )
    session.execute(
        update(Allocation)
        .where(
            Allocation.job_id.in_(job_ids),
            Allocation.released_at.is_(None),
            ~still_running,
        )
        .values(released_at=func.now())
    )


def release_allocations(session: Session, job_id: int) -> None:
    session.execute(
        update(Allocation)
        .where(Allocation.job_id == job_id, Allocation.released_at.is_(None))
        .values(released_at=func.now())
    )


def wake_scheduler(session: Session, *, arrival: bool = False) -> None:
    """Ask the active scheduler for a pass once this transaction commits; `arrival`: for a
    job that only joined the queue (passes for arrivals are coalesced)."""
    session.execute(_NOTIFY, {"channel": WAKE_CHANNEL, "payload": WAKE_ARRIVAL if arrival else ""})
