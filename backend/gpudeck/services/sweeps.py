"""Sweeps: many jobs from one spec. The members are ordinary jobs: each is validated and
created as a single submit would be (services/jobs.create_job), never started at submit (the
scheduler starts them, at most `max_parallel` at once: services/queue_plan.py), and carries its
sweep, its index and its parameter values. Takes a Session; the caller commits."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select
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
    SweepPublic,
    SweepSummary,
)
from gpudeck.services import job_state, placement_request, queue, queue_actions
from gpudeck.services import jobs as job_service
from gpudeck.services import resume as resume_service
from gpudeck.services.errors import DomainError, InvalidInput, NotFound, TooLarge
from gpudeck.services.estimates import EstimateMemo, estimate_bytes_per_device
from gpudeck.services.sweep_params import TooManyMembers, members, with_values


class SweepNotFound(NotFound):
    def __init__(self, sweep_id: int) -> None:
        super().__init__(message=f"no sweep {sweep_id}", field="sweep_id", code="sweep_not_found")


def expand(spec: SweepCreate) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(values, config) of every member, each config validated as its job's would be; the
    first invalid member is refused with its index, its values and the field."""
    try:
        values = members(spec.parameters)
    except TooManyMembers as exc:
        raise TooLarge(message=str(exc), field="parameters", code="too_many_members") from None
    out = []
    for index, chosen in enumerate(values):
        config = with_values(spec.job.config, chosen)
        try:
            config = job_service.validate_config(spec.job.kind, config, spec.job.world_size)
        except InvalidInput as exc:
            raise _of_member(exc, index, chosen) from None
        out.append((chosen, config))
    return out


def _shown(chosen: dict[str, Any]) -> str:
    return ", ".join(f"{p}={v!r}" for p, v in chosen.items())


def _of_member(exc: InvalidInput, index: int, chosen: dict[str, Any]) -> InvalidInput:
    """The member's errors, each under `members[i]` and saying its values."""
    errors: list[tuple[str, str]] = exc.extra["errors"]
    return InvalidInput(
        [
            (f"members[{index}].{f}", f"{why} (member {index}: {_shown(chosen)})")
            for f, why in errors
        ]
    )


def create_sweep(
    session: Session,
    spec: SweepCreate,
    *,
    owner: job_service.Submitter,
    data_dir: Path | None = None,
) -> Sweep:
    """The sweep and all its members, or nothing (the caller's transaction).

    One submit path: the steps of a single submit (services/jobs.create_job), the shared ones
    once and the config's per member: where the jobs may run (resolved once: the members share
    the spec's placement), the scheduling fields and the queued-jobs quota (for all members),
    then each member's config, inputs and what its estimate can never fit. The members are
    inserted together and never start at submit: the scheduler starts them, at most
    `max_parallel` at once."""
    if not spec.job.queue:
        raise InvalidInput([("job.queue", "a sweep's members wait for their turn: queue true")])
    job = spec.job
    placement = placement_request.resolve(session, job)
    planned = expand(spec)
    quota = queue.quota_of(session, owner.owner)
    time_limit = job_service.check_scheduling(session, job, owner, quota, jobs=len(planned))
    check_inputs = job_service.inputs_due(session, job, data_dir)
    name = spec.name or f"{job.kind}-sweep"
    width = len(str(len(planned) - 1))
    rows, readable, estimated = [], set[int](), EstimateMemo()
    for index, (chosen, config) in enumerate(planned):
        try:
            job_service.check_reads_own_job(session, job.kind, config, owner, readable)
            if check_inputs:
                assert data_dir is not None
                job_service.check_inputs(job.kind, config, data_dir)
            # Once per distinct config as the estimate reads it (an lr sweep: once).
            estimate = estimate_bytes_per_device(job.kind, config, job.world_size, estimated)
            node = placement.home_node(job, estimate)
        except InvalidInput as exc:  # it could never fit a device, ...
            raise _of_member(exc, index, chosen) from None
        except DomainError as exc:
            exc.message = f"member {index} ({_shown(chosen)}): {exc.message}"
            raise
        row = job_service.job_columns(
            job,
            config,
            name=f"{name}-{index:0{width}d}",
            owner=owner.owner,
            node=node,
            placement=placement,
            estimate=estimate,
            time_limit_s=time_limit,
        )
        rows.append(row | {"sweep_index": index, "sweep_params": chosen})
    sweep = Sweep(
        name=name,
        owner=owner.owner,
        kind=job.kind,
        spec=spec.model_dump(mode="json"),
        max_parallel=spec.max_parallel,
    )
    session.add(sweep)
    session.flush()
    # In index order: the members' ids (the queue's tie-break) follow their indices.
    session.execute(insert(Job), [row | {"sweep_id": sweep.id} for row in rows])
    session.flush()
    job_state.wake_scheduler(session, arrival=True)
    return sweep


def _member_spec(job: JobCreate, config: dict[str, Any], name: str) -> JobCreate:
    """A member as a single job: the sweep's job with the member's config and name."""
    return job.model_copy(update={"config": config, "name": name})


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


def resume_sweep(
    session: Session, sweep_id: int, *, owner: job_service.Submitter, data_dir: Path
) -> list[int]:
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
            again = job_service.create_job(
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


def cancel_sweep(session: Session, sweep_id: int) -> job_service.Cancelled:
    """Every member that has not ended: the waiting ones are cancelled together, in one
    statement (they hold no running process); a starting or running one is asked to stop, as
    a single cancel asks it, and its worker ends it after its final checkpoint. Only a
    member's newest job can be live (a resume re-runs ended ones), so every job of the sweep
    that has not ended is one."""
    get_sweep(session, sweep_id)
    return job_service.cancel_jobs(session, Job.sweep_id == sweep_id)


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
    return [SweepSummary(**_header(s), counts=dict(counts[s.id])) for s in sweeps]
