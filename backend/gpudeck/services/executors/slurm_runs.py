"""The database side of jobs on a Slurm cluster: which jobs are due to be submitted, what a poll
read of each, and their ends. The executor's pass (scheduler/slurm_pass.py) talks to Slurm and
calls these, one short transaction each; every state change goes through jobs/state.py's
transitions, as on GPUDeck's own nodes. Takes a Session, never commits.

Slurm's states map onto GPUDeck's: PENDING is queued (the reason is Slurm's, in the queue's
words), RUNNING is running (queued -> starting -> running in one step: Slurm already started
it), a requeue is running -> queued (the attempt ends, the next start is a new one, resumed
from the job's newest checkpoint), and an end is the job's end. `unknown` (slurmctld silent)
changes nothing but the view: never a false failure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Table,
    and_,
    bindparam,
    func,
    not_,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus, Sweep
from gpudeck.schemas.jobs import QueueInfo
from gpudeck.services.jobs import state as job_state
from gpudeck.slurm import JobState

LIVE = (JobStatus.queued, JobStatus.starting, JobStatus.running)


@dataclass(frozen=True)
class LiveJob:
    """A live job of a cluster as the pass reads it."""

    id: int
    status: JobStatus
    slurm_job_id: str | None
    cancel_requested: bool
    world_size: int
    view: dict[str, Any]


def live_jobs(session: Session, cluster_id: int) -> list[LiveJob]:
    rows = session.execute(
        select(
            Job.id, Job.status, Job.slurm_job_id, Job.cancel_requested_at, Job.world_size,
            Job.slurm,
        )
        .where(Job.cluster_id == cluster_id, Job.status.in_(LIVE))
        .order_by(Job.id)
    ).all()  # fmt: skip
    return [
        LiveJob(r.id, JobStatus(r.status), r.slurm_job_id, r.cancel_requested_at is not None,
                r.world_size, dict(r.slurm or {}))
        for r in rows
    ]  # fmt: skip


def due_for_submit(session: Session, cluster_id: int, limit: int) -> list[Job]:
    """Queued jobs not yet handed to Slurm, highest priority then oldest first, locked (SKIP
    LOCKED: a second pass never submits one twice): not held, not a sweep's member (those go
    as arrays: sweep_members_due), their dependencies succeeded."""
    jobs = session.scalars(
        select(Job)
        .where(_unsubmitted(cluster_id), Job.sweep_id.is_(None))
        .order_by(Job.priority.desc(), Job.id)
        .limit(limit * 4)  # some may wait on a dependency
        .with_for_update(skip_locked=True)
    )
    due = [j for j in jobs if not j.depends_on or _dependencies_met(session, j.depends_on)]
    return due[:limit]


def sweep_members_due(session: Session, cluster_id: int) -> list[tuple[Sweep, list[Job]]]:
    """Each sweep's members not yet handed to Slurm, in member order, locked (SKIP LOCKED)."""
    members = session.scalars(
        select(Job)
        .where(_unsubmitted(cluster_id), Job.sweep_id.is_not(None))
        .order_by(Job.sweep_id, Job.sweep_index, Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    by_sweep: dict[int, list[Job]] = {}
    for job in members:
        by_sweep.setdefault(int(job.sweep_id or 0), []).append(job)
    sweeps = {s.id: s for s in session.scalars(select(Sweep).where(Sweep.id.in_(by_sweep)))}
    return [(sweeps[sweep_id], jobs) for sweep_id, jobs in by_sweep.items()]


def last_array(session: Session, sweep_id: int) -> str | None:
    """The Slurm array a sweep's newest submitted members run in: the next one starts after it."""
    newest = session.scalar(
        select(func.max(func.split_part(Job.slurm_job_id, "_", 1).cast(BigInteger))).where(
            Job.sweep_id == sweep_id, Job.slurm_job_id.is_not(None)
        )
    )
    return None if newest is None else str(newest)


def _unsubmitted(cluster_id: int) -> ColumnElement[bool]:
    return and_(
        Job.cluster_id == cluster_id,
        Job.status == JobStatus.queued,
        Job.slurm_job_id.is_(None),
        not_(Job.held),
        Job.cancel_requested_at.is_(None),
    )


def _dependencies_met(session: Session, depends_on: list[int]) -> bool:
    done = session.scalar(
        select(func.count()).where(Job.id.in_(depends_on), Job.status == JobStatus.succeeded)
    )
    return done == len(set(depends_on))


def array_throttles(session: Session, cluster_id: int) -> dict[str, int]:
    """Each live array of a sweep on the cluster -> its sweep's max_parallel now."""
    rows = session.execute(
        select(func.split_part(Job.slurm_job_id, "_", 1), Sweep.max_parallel)
        .join(Sweep, Sweep.id == Job.sweep_id)
        .where(
            Job.cluster_id == cluster_id,
            Job.slurm_job_id.contains("_"),
            Job.status.in_(LIVE),
            Sweep.max_parallel.is_not(None),
        )
        .distinct()
    ).all()
    return {str(array_id): int(most) for array_id, most in rows}


def record_submitted(
    session: Session, job: Job, slurm_job_id: str, *, run_dir: str | None = None
) -> None:
    """Slurm took the job (`run_dir`: where its ranks write, when not its own directory)."""
    job.slurm_job_id = slurm_job_id
    view = {**(job.slurm or {}), "state": "PENDING", "polled_at": _now()}
    view.pop("sbatch_unanswered", None)
    if run_dir is not None:
        view["run_dir"] = run_dir
    job.slurm = view
    session.flush()


def refuse(session: Session, job_id: int, message: str) -> Job:
    """sbatch refused the job: it fails with Slurm's own words, and nothing waits on Slurm.
    (Handing it to Slurm was its start: queued -> starting -> failed, as a job whose ranks
    could not start on GPUDeck's own nodes.)"""
    job_state.transition(session, job_id, JobStatus.starting)
    return job_state.transition(
        session, job_id, JobStatus.failed, error=f"Slurm refused the job: {message}"
    )


@dataclass(frozen=True)
class Seen:
    """What a poll's state did to a live job: it runs now (started: a new attempt), it waits
    again after running (requeued), or nothing but the view changed."""

    started: bool = False
    requeued: bool = False


def changes(job: LiveJob, read: JobState) -> bool:
    """Whether a poll's word on a live job changes anything: its status, or what the view
    shows. Thousands of pending jobs that Slurm still holds as before cost no write."""
    view = job.view
    if read.state == "unknown":
        return not view.get("unknown") or view.get("reason") != read.reason
    status_agrees = {
        "queued": job.status is JobStatus.queued,
        "starting": job.status is JobStatus.running,
        "running": job.status is JobStatus.running,
    }.get(read.state, False)
    return not (
        status_agrees
        and not view.get("unknown")
        and view.get("state") == read.slurm_state
        and view.get("reason") == read.reason
        and (read.nodes is None or view.get("nodes") == read.nodes)
    )


def view_after(view: dict[str, Any], read: JobState) -> dict[str, Any]:
    """The job's view once a poll read `read` (the state is kept when Slurm did not answer)."""
    view = {**view, "polled_at": _now(), "unknown": read.state == "unknown"}
    if read.state == "unknown":
        view["reason"] = read.reason  # why nothing could be read
        return view
    view.update(state=read.slurm_state, reason_code=read.reason_code, reason=read.reason)
    if read.nodes:
        view["nodes"] = read.nodes
    return view


def moves(job: LiveJob, read: JobState) -> bool:
    """Whether the poll moves the job's status (a start, a requeue), not only its view."""
    if read.state in ("starting", "running"):
        return job.status is not JobStatus.running
    return read.state == "queued" and job.status is not JobStatus.queued


def write_views(session: Session, views: dict[int, dict[str, Any]]) -> None:
    """Views whose jobs keep their status, in one statement (thousands of pending jobs after
    slurmctld came back cost one round trip, not thousands)."""
    if views:
        jobs = cast(Table, Job.__table__)  # Core: an executemany, not the ORM's bulk update
        session.connection().execute(
            update(jobs)
            # Not IN (...): an expanding list cannot go with executemany.
            .where(jobs.c.id == bindparam("job_id"), or_(*(jobs.c.status == s for s in LIVE)))
            .values(slurm=bindparam("view", type_=jobs.c.slurm.type)),
            [{"job_id": job_id, "view": view} for job_id, view in views.items()],
        )


def apply_live(session: Session, job_id: int, read: JobState) -> Seen:
    """A poll's word that moves a job's status: Slurm started it (a new attempt), or it waits
    again after running (requeued: the attempt has ended)."""
    job = job_state.lock_job(session, job_id)
    status = JobStatus(job.status)
    if status not in LIVE:
        return Seen()
    view = view_after(dict(job.slurm or {}), read)
    seen = Seen()
    if read.state in ("starting", "running") and status is not JobStatus.running:
        if status is JobStatus.queued:
            job_state.transition(session, job_id, JobStatus.starting)
        job_state.transition(session, job_id, JobStatus.running)
        view["attempts"] = int(view.get("attempts", 0)) + 1
        seen = Seen(started=True)
    elif read.state == "queued" and status is not JobStatus.queued:
        if status is JobStatus.starting:
            job_state.transition(session, job_id, JobStatus.running)
        job_state.transition(
            session, job_id, JobStatus.queued, error=f"requeued by Slurm ({read.slurm_state})"
        )
        seen = Seen(requeued=True)
    job = job_state.lock_job(session, job_id)
    job.slurm = view
    session.flush()
    return seen


def finish(
    session: Session,
    job_id: int,
    read: JobState,
    rank_error: str | None,
    *,
    signalled: bool = False,
) -> Job | None:
    """Slurm ended the job: its end in GPUDeck's words. A cancel GPUDeck asked for reads
    `cancelled` however the ranks left (they return after their final checkpoint); ranks that
    returned after the time limit's warning (`signalled`, with no cancel asked) read `timeout`;
    a failure names the rank's error when one reported it, else Slurm's state, exit, nodes."""
    job = job_state.lock_job(session, job_id)
    status = JobStatus(job.status)
    if status not in LIVE:
        return None
    view = dict(job.slurm or {})
    view.update(state=read.slurm_state, polled_at=_now(), unknown=False, reason=None)
    if read.nodes:
        view["nodes"] = read.nodes
    job.slurm = view
    target, error = _end_of(read, job.cancel_requested_at is not None, rank_error, signalled)
    if status is JobStatus.queued and target is not JobStatus.cancelled:
        job_state.transition(session, job_id, JobStatus.starting)  # it ran, between two polls
    if JobStatus(job.status) is JobStatus.starting and target is not JobStatus.cancelled:
        job_state.transition(session, job_id, JobStatus.running)
    return job_state.transition(session, job_id, target, error=error)


def _end_of(
    read: JobState, cancel_asked: bool, rank_error: str | None, signalled: bool
) -> tuple[JobStatus, str | None]:
    where = f" on {read.nodes}" if read.nodes else ""
    if cancel_asked:
        return JobStatus.cancelled, None
    if read.state == "succeeded" and signalled:
        return JobStatus.timeout, "stopped at its time limit, after a final checkpoint"
    if read.state == "succeeded":
        return JobStatus.succeeded, None
    if read.state == "timeout":
        return JobStatus.timeout, f"Slurm ended it at its time limit{where}"
    if read.state == "cancelled":
        return JobStatus.cancelled, f"cancelled in Slurm (scancel outside GPUDeck){where}"
    how = read.slurm_state or "FAILED"
    if read.exit_signal:
        how += f", signal {read.exit_signal}"
    elif read.exit_code is not None:
        how += f", exit code {read.exit_code}"
    return JobStatus.failed, rank_error or f"Slurm: {how}{where}"


def queue_info(job: Job) -> QueueInfo:
    """Why a queued job on a cluster waits: not handed to Slurm yet (and why), or Slurm's own
    pending reason in the queue's words; Slurm orders its queue, so there is no position."""
    view = job.slurm or {}
    cluster = job.cluster_name or "its cluster"
    if job.slurm_job_id is None:
        if job.held:
            code, reason = "held", "held: release it to let it start"
        elif job.depends_on:
            names = ", ".join(str(d) for d in job.depends_on)
            code, reason = "dependency", f"waiting for job {names} to succeed"
        else:
            code, reason = "cluster", f"to be submitted to Slurm cluster {cluster} (sbatch)"
    elif view.get("unknown"):
        code, reason = "cluster", f"Slurm did not answer: {view.get('reason')}"
    else:
        code = view.get("reason_code") or "cluster"
        reason = f"Slurm ({cluster}): {view.get('reason') or 'pending'}"
    return QueueInfo(position=None, reason_code=code, reason=reason, expected_start_at=None)


def _now() -> str:
    return datetime.now(UTC).isoformat()
