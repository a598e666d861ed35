"""A sweep after its creation: read it and its members, resume, hold, cancel, list. Takes a
Session, never commits."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus, Sweep
from gpudeck.schemas.failure import failure_cause
from gpudeck.schemas.job_runs import JobResume
from gpudeck.schemas.jobs import JobCreate, Progress
from gpudeck.schemas.sweeps import (
    SweepCreate,
    SweepHeader,
    SweepMember,
    SweepParameters,
    SweepPublic,
    SweepSummary,
    SweptParameter,
)
from gpudeck.services.errors import NotFound
from gpudeck.services.jobs import cancel as jobs_cancel
from gpudeck.services.jobs import state as job_state
from gpudeck.services.queue import actions as queue_actions
from gpudeck.services.submit import resume as resume_service
from gpudeck.services.submit import submission
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.sweeps import params


class SweepNotFound(NotFound):
    def __init__(self, sweep_id: int) -> None:
        super().__init__(message=f"no sweep {sweep_id}", field="sweep_id", code="sweep_not_found")


def get_sweep(session: Session, sweep_id: int) -> Sweep:
    sweep = session.get(Sweep, sweep_id)
    if sweep is None:
        raise SweepNotFound(sweep_id)
    return sweep


def member_jobs(session: Session, sweep_id: int) -> list[Job]:
    """Each member's newest job (a resumed member has a new one), by index."""
    query = (
        select(Job)
        .where(Job.sweep_id == sweep_id)
        .order_by(Job.sweep_index, Job.id.desc())
        .ext(distinct_on(Job.sweep_index))
    )
    return list(session.scalars(query))


# A member that ended in one of these is run again by a sweep's resume (stopped_early is not:
# its rule found it hopeless).
RESUMED = {JobStatus.failed, JobStatus.cancelled, JobStatus.lost, JobStatus.timeout}


def resume_sweep(session: Session, sweep_id: int, *, owner: Submitter, data_dir: Path) -> list[int]:
    """Each member that failed or was cancelled (lost, timed out) runs again: from its newest
    checkpoint where it has one, else from the start; the new jobs wait for the scheduler and
    its max_parallel. Returns their ids."""
    spec = SweepCreate.model_validate(get_sweep(session, sweep_id).spec)
    started = []
    for job in member_jobs(session, sweep_id):
        if JobStatus(job.status) not in RESUMED:
            continue
        try:
            again = resume_service.resume_job(
                session,
                job.id,
                JobResume(name=job.name),
                owner=owner.owner,
                data_dir=data_dir,
                may_start_now=False,
            )
        except (resume_service.NothingToResume, resume_service.NotResumable):
            # From the start, placed and scheduled as the sweep's spec says (devices, count
            # over nodes, priority, time limit), not only its count on its last node.
            again = submission.create_job(
                session,
                _member_spec(spec.job, job.config, job.name),
                owner=owner,
                may_start_now=False,
            )
        again.sweep_id, again.sweep_index, again.sweep_params = (
            sweep_id,
            job.sweep_index,
            job.sweep_params,
        )
        started.append(again.id)
    session.flush()
    return started


def _member_spec(job: JobCreate, config: dict[str, Any], name: str) -> JobCreate:
    """A member as a single job: the sweep's job with the member's config and name."""
    return job.model_copy(update={"config": config, "name": name})


def _header(sweep: Sweep) -> dict[str, Any]:
    """The sweep's SweepHeader fields, for any view of it."""
    return {name: getattr(sweep, name) for name in SweepHeader.model_fields}


def public(session: Session, sweep: Sweep) -> SweepPublic:
    jobs = member_jobs(session, sweep.id)
    estimates = [j.estimate_bytes_per_device for j in jobs if j.estimate_bytes_per_device]
    return SweepPublic(
        **_header(sweep),
        spec=sweep.spec,
        counts=dict(Counter(str(j.status) for j in jobs)),
        largest_estimate_bytes=max(estimates) if estimates else None,
        members=[
            SweepMember(
                job_id=j.id,
                index=j.sweep_index or 0,
                params=j.sweep_params or {},
                name=j.name,
                status=str(j.status),
                progress=Progress.model_validate(j.progress),
                error_summary=failure_cause(j.error),
                metrics=dict(j.latest_metrics),
                started_at=j.started_at,
                finished_at=j.finished_at,
            )
            for j in jobs
        ],
    )


def set_max_parallel(session: Session, sweep_id: int, max_parallel: int) -> Sweep:
    """At most `max_parallel` members run at once from now on: the scheduler's next pass starts
    more (or, lowered, starts none until enough have ended: running members are not stopped);
    on a Slurm cluster the executor's next pass sets its arrays' throttle."""
    sweep = get_sweep(session, sweep_id)
    sweep.max_parallel = max_parallel
    # The scheduler's cache of waiting jobs re-reads a job when its row's version changes, and
    # a member carries its sweep's max_parallel: a no-op update of the waiting ones makes the
    # next pass read the new figure.
    session.execute(
        update(Job)
        .where(Job.sweep_id == sweep_id, Job.status == JobStatus.queued)
        .values(sweep_id=Job.sweep_id),
        execution_options={"synchronize_session": False},
    )
    job_state.wake_scheduler(session)
    session.flush()
    return sweep


def cancel_sweep(session: Session, sweep_id: int) -> jobs_cancel.Cancelled:
    """Every member that has not ended: the waiting ones are cancelled together, in one
    statement (they hold no running process); a starting or running one is asked to stop, as
    a single cancel asks it, and its worker ends it after its final checkpoint. Only a
    member's newest job can be live (a resume re-runs ended ones), so every job of the sweep
    that has not ended is one."""
    get_sweep(session, sweep_id)
    return jobs_cancel.cancel_jobs(session, Job.sweep_id == sweep_id)


def set_sweep_held(session: Session, sweep_id: int, held: bool) -> list[int]:
    """Hold (or release) every member still waiting for devices; returns their ids."""
    get_sweep(session, sweep_id)
    acted = []
    for job in member_jobs(session, sweep_id):
        if job.status == JobStatus.queued and not job.allocations and job.held != held:
            queue_actions.set_held(session, job.id, held)
            acted.append(job.id)
    return acted


def list_sweeps(session: Session, limit: int = 50) -> list[SweepSummary]:
    """The newest sweeps, each with its members counted by status (a member's newest job)."""
    sweeps = list(session.scalars(select(Sweep).order_by(Sweep.id.desc()).limit(limit)))
    ids = [s.id for s in sweeps]
    counts: dict[int, Counter[str]] = {i: Counter() for i in ids}
    if ids:
        newest = (
            select(Job.sweep_id, Job.status)
            .where(Job.sweep_id.in_(ids))
            .order_by(Job.sweep_id, Job.sweep_index, Job.id.desc())
            .ext(distinct_on(Job.sweep_id, Job.sweep_index))
            .subquery()
        )
        rows = session.execute(
            select(newest.c.sweep_id, newest.c.status, func.count()).group_by(
                newest.c.sweep_id, newest.c.status
            )
        )
        for sweep_id, status, n in rows:
            if sweep_id is not None:
                counts[sweep_id][str(status)] = n
    return [SweepSummary(**_header(s), counts=dict(counts[s.id]), swept=_swept(s)) for s in sweeps]


def _swept(sweep: Sweep) -> list[SweptParameter]:
    """The swept parameters of its spec as accepted (validated again: the spec is stored JSON)."""
    try:
        return params.swept(SweepParameters.model_validate(sweep.spec["parameters"]))
    except (KeyError, TypeError, ValidationError):
        return []  # a spec stored before its shape was checked: the list shows no parameters
