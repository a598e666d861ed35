"""Jobs: create (with reservation), read, list, cancel. Takes a Session, never commits."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from gpudeck.core.security import Principal
from gpudeck.engine.kinds import get_kind, refused_kinds, registry
from gpudeck.models import Allocation, Device, Job, JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services import job_state, placement_request, queue
from gpudeck.services.allocation import (
    Chosen,
    holders_by_node,
    raise_if_held,
    reserve,
    reserve_count,
)
from gpudeck.services.config_errors import config_errors
from gpudeck.services.errors import (
    Conflict,
    Forbidden,
    GpuBusy,
    InvalidInput,
    InvalidTransition,
    JobNotFound,
    NotEnoughDevices,
)
from gpudeck.services.estimates import estimate_bytes_per_device
from gpudeck.services.placement import InsufficientMemory, Readings, short_devices
from gpudeck.services.placement_request import Placement, not_enough_across, per_node
from gpudeck.services.queue_plan import Quota, choose_spread
from gpudeck.services.submit_checks import (
    check_kind_inputs,
    refuse_non_finite,
    refuse_nul,
)
from gpudeck.services.users import may_run_code


def validate_config(kind_name: str, config: dict[str, Any], world_size: int) -> dict[str, Any]:
    """The kind's own model validates the config; errors come back with their field paths."""
    kind = get_kind(kind_name)
    if kind is None:
        refused = refused_kinds().get(kind_name)
        if refused is not None:
            raise InvalidInput([("kind", f"{kind_name!r} is unavailable: {refused.reason}")])
        known = ", ".join(sorted(registry()))
        raise InvalidInput([("kind", f"unknown job kind {kind_name!r}; known kinds: {known}")])
    refuse_non_finite(config, "config")
    try:
        # Strict, as JSON: the same rules for every kind, plugins included ("16" is not an
        # int, true is not a number), whatever the kind's own model_config says.
        model = kind.config_model.model_validate_json(json.dumps(config), strict=True)
    except ValidationError as exc:
        raise InvalidInput(config_errors(kind.config_model, exc)) from None
    if kind.batch_size_field:
        batch = getattr(model, kind.batch_size_field)
        if batch % world_size:
            raise InvalidInput(
                [
                    (
                        f"config.{kind.batch_size_field}",
                        f"{batch} does not split evenly across {world_size} devices",
                    )
                ]
            )
    return model.model_dump(mode="json")


def steps_of(kind_name: str, config: dict[str, Any]) -> int | None:
    kind = get_kind(kind_name)
    field = kind.steps_field if kind else None
    return int(config[field]) if field and field in config else None


@dataclass(frozen=True)
class Submitter:
    """Who submits, and the operator's time limits."""

    owner: str
    is_admin: bool = False
    default_time_limit_s: int = 24 * 3600
    max_time_limit_s: int = 30 * 86400


def _waits_for_unfinished(session: Session, depends_on: Sequence[int]) -> bool:
    """A job waiting for others may read what they will write (an SAE on an extraction's
    output): its inputs are checked when its ranks start, not at submit."""
    if not depends_on:
        return False
    statuses = session.scalars(select(Job.status).where(Job.id.in_(depends_on)))
    return any(JobStatus(s) != JobStatus.succeeded for s in statuses)


def inputs_due(session: Session, spec: JobCreate, data_dir: Path | None) -> bool:
    """Whether a submit checks its kind's inputs now: with a data directory, unless the job
    waits for unfinished jobs (their outputs may be its inputs)."""
    return data_dir is not None and not _waits_for_unfinished(session, spec.depends_on)


def check_inputs(kind_name: str, config: dict[str, Any], data_dir: Path) -> None:
    """The kind's inputs (a file dataset, a model directory) exist under `data_dir` now."""
    kind = get_kind(kind_name)
    assert kind is not None  # validate_config refused unknown kinds
    check_kind_inputs(kind, kind.config_model.model_validate(config), data_dir)


def check_scheduling(
    session: Session, spec: JobCreate, who: Submitter, quota: Quota, *, jobs: int = 1
) -> int:
    """The scheduling fields beyond their schema, for `jobs` jobs of one spec (a sweep's
    members); returns their time limit."""
    if spec.priority > 0 and not who.is_admin:
        raise Forbidden("only an admin may submit with a priority above 0", field="priority")
    limit = spec.time_limit_s or who.default_time_limit_s
    if limit > who.max_time_limit_s:
        raise InvalidInput(
            [("time_limit_s", f"{limit} s exceeds the maximum of {who.max_time_limit_s} s")]
        )
    if not spec.queue and (spec.hold or spec.depends_on):
        field = "hold" if spec.hold else "depends_on"
        raise InvalidInput([(field, "a job that must wait cannot be sent with queue: false")])
    if spec.depends_on:
        found = set(session.scalars(select(Job.id).where(Job.id.in_(spec.depends_on))))
        for i, dep in enumerate(spec.depends_on):
            if dep not in found:
                raise InvalidInput([(f"depends_on.{i}", f"job {dep} does not exist")])
    most = quota.max_queued_jobs
    if most is not None and queue.queued_count(session, who.owner) + jobs > most:
        these = f"; this sweep has {jobs}" if jobs > 1 else ""
        raise Conflict(
            message=f"quota: {who.owner} may have {most} jobs queued{these}",
            field="queue",
            code="quota_exceeded",
        )
    return limit


def check_reads_own_job(
    session: Session,
    kind_name: str,
    config: dict[str, Any],
    who: Submitter,
    allowed: set[int] | None = None,
) -> None:
    """A kind that reads another job's checkpoints or output (JobKind.reads_job_field) reads
    only its submitter's jobs, unless an admin submits: the figures it makes from them are
    its owner's, and another user's job's are not theirs to see. `allowed`: jobs already
    found readable by this submitter (a sweep's members mostly read the same one); those
    that pass are added."""
    kind = get_kind(kind_name)
    field = kind.reads_job_field if kind else None
    if field is None or config.get(field) is None:
        return
    job_id = int(config[field])
    if allowed is not None and job_id in allowed:
        return
    owner = session.scalar(select(Job.owner).where(Job.id == job_id))
    if owner is None:
        raise InvalidInput([(f"config.{field}", f"job {job_id} does not exist")])
    if owner != who.owner and not who.is_admin:
        raise Forbidden(
            f"job {job_id} is {owner}'s: only {owner} or an admin may run a job on it",
            field=f"config.{field}",
        )
    if allowed is not None:
        allowed.add(job_id)


def check_may_submit(kind_name: str, principal: Principal) -> None:
    """A kind that runs the user's own code (`script`) needs the `run_code` permission."""
    kind = get_kind(kind_name)
    if kind is not None and kind.runs_user_code and not may_run_code(principal):
        raise Forbidden(
            f"{kind_name} jobs run your own code: an admin must grant you run_code", field="kind"
        )


def create_job(
    session: Session,
    spec: JobCreate,
    *,
    owner: str | Submitter,
    read_live: Callable[[], Readings | None] = lambda: None,
    data_dir: Path | None = None,
    may_start_now: bool = True,
) -> Job:
    """Insert the job and, when it may start now, reserve its devices in the caller's
    transaction; otherwise it waits for the scheduler (`queue`, the default) or, with
    `queue: false`, the submission is refused as devices busy.

    The steps, each named: where it may run (placement_request.resolve), its config, its
    inputs (with `data_dir`, a file dataset must exist there now), its scheduling fields, what
    its estimate can never fit (Placement.home_node), then one reservation step. A sweep runs
    the same steps for each member (services/sweeps.py). `read_live` reads the nodes' fresh
    free memory (None: unknown), only for a job that may start now. `may_start_now=False`: it
    waits for the scheduler whatever is free (a resumed sweep member: the scheduler keeps to
    the sweep's max_parallel)."""
    who = owner if isinstance(owner, Submitter) else Submitter(owner)
    refuse_nul(spec.config, "config")
    placement = placement_request.resolve(session, spec)
    config = validate_config(spec.kind, spec.config, spec.world_size)
    check_reads_own_job(session, spec.kind, config, who)
    if inputs_due(session, spec, data_dir):
        assert data_dir is not None
        check_inputs(spec.kind, config, data_dir)
    quota = queue.quota_of(session, who.owner)  # read once: the checks below share it
    time_limit = check_scheduling(session, spec, who, quota)
    estimate = estimate_bytes_per_device(spec.kind, config, spec.world_size)
    node = placement.home_node(spec, estimate)
    job = Job(
        **job_columns(
            spec,
            config,
            name=spec.name or f"{spec.kind}-job",
            owner=who.owner,
            node=node,
            placement=placement,
            estimate=estimate,
            time_limit_s=time_limit,
        )
    )
    starts = _may_start_now(session, spec, who, quota, may_start_now)
    _reserve(session, job, spec, placement, estimate, read_live, starts)
    return job


def job_columns(
    spec: JobCreate,
    config: dict[str, Any],
    *,
    name: str,
    owner: str,
    node: str,
    placement: Placement,
    estimate: int | None,
    time_limit_s: int,
) -> dict[str, Any]:
    """A new job's row: one job's, or each of a sweep's members (inserted together)."""
    named = placement.named
    return {
        "name": name,
        "kind": spec.kind,
        "config": config,
        "owner": owner,
        "node": node,
        "world_size": spec.world_size,
        "status": JobStatus.queued,
        "progress_total": steps_of(spec.kind, config),
        "estimate_bytes_per_device": estimate,
        "priority": spec.priority,
        "time_limit_s": time_limit_s,
        "depends_on": list(spec.depends_on),
        "preemptible": spec.preemptible,
        "held": spec.hold,
        "requested_devices": [d.uuid for d in named] if named else None,
        "requested_nodes": [d.node for d in named] if len(placement.nodes) > 1 else None,
        "spread_nodes": placement.spread_nodes,
        "devices_per_node": spec.devices_per_node,
    }


def _reserve(
    session: Session,
    job: Job,
    spec: JobCreate,
    placement: Placement,
    estimate: int | None,
    read_live: Callable[[], Readings | None],
    starts: bool,
) -> None:
    """The one reservation step. It starts at once only when it may (`starts`), nothing waits
    ahead of it on its nodes (a stream of small jobs must not overtake a waiting large one)
    and its devices are free; with `queue: false` it must start now or is refused. Unless the
    request says `force`, devices whose live free memory cannot hold the estimate are refused
    (named) or passed over (count). Otherwise the job waits and the scheduler is woken."""
    judged = estimate is not None and not spec.force

    @functools.cache
    def live() -> Readings | None:  # read at most once, and only for a start now
        return read_live() if judged else None

    devices = list(placement.named)
    if placement.spread is not None and starts:
        readings = live()
        fit_to = estimate if readings is not None else None
        devices = _spread_now(session, placement, spec, fit_to, readings)
        if not devices and not spec.queue:
            raise _no_room_across(session, placement, spec)
        job.node = devices[0].node if devices else job.node
        starts = bool(devices)
    nodes = list(dict.fromkeys(d.node for d in devices)) or [job.node]
    starts = starts and not queue.waiting_on_nodes(session, nodes)
    if starts and not devices:
        # An unlocked look first: with too few devices free, a queueing count request need not
        # wait for the device-row locks to find that out.
        starts = queue.free_devices(session, job.node) >= spec.world_size
    if starts or not spec.queue:
        try:
            # Fast refusal for the common conflict, before any insert; the unique index still
            # decides every race this read cannot see.
            if devices:
                raise_if_held(session, devices)
                short = short_devices(
                    [(d.node, d.uuid) for d in devices], estimate or 0, live() or {}
                )
                if live() is not None and short:
                    raise InsufficientMemory(int(estimate or 0), short)
            session.add(job)
            session.flush()
            # In a savepoint: a count that finds no room gives back the device-row locks at
            # once, instead of holding them (and every concurrent submit) until commit.
            with session.begin_nested():
                fit_to = estimate if live() is not None else None
                _reserve_now(session, job, spec, devices, fit_to, live())
        except (GpuBusy, NotEnoughDevices, InsufficientMemory):
            if not spec.queue:
                raise
    if job.id is None:  # never reserved: it holds nothing (no reload, a queued submit is hot)
        job.allocations = []
        session.add(job)
        session.flush()
    else:
        session.refresh(job, ["allocations"])
    if not job.allocations:
        job_state.wake_scheduler(session, arrival=True)  # it waits: the scheduler places it


def _spread_now(
    session: Session,
    placement: Placement,
    spec: JobCreate,
    estimate: int | None,
    live: Readings | None,
) -> list[Chosen]:
    """Free devices for a count spread over nodes now, by the pass's rule (fewest nodes, best
    fit); empty when there are none. Reserved like named devices, so the unique index still
    decides a race."""
    assert placement.spread is not None
    inventory = placement.inventory
    held = holders_by_node(session, [Chosen(d.node, d.uuid, d.index) for d in inventory])
    readings = live if estimate is not None else None  # no estimate: memory is not judged
    devs = [queue.plan_device(d, held, readings) for d in inventory]
    chosen = choose_spread(devs, spec.world_size, placement.spread, estimate)
    return [Chosen(d.node, d.uuid, d.index) for d in chosen or []]


def _no_room_across(session: Session, placement: Placement, spec: JobCreate) -> Conflict:
    """`queue: false` and no room now for a count spread over nodes."""
    assert placement.spread is not None
    inventory = placement.inventory
    held = holders_by_node(session, [Chosen(d.node, d.uuid, d.index) for d in inventory])
    free = [d for d in inventory if (d.node, d.uuid) not in held and not d.external_processes]
    return not_enough_across(
        spec,
        placement.spread,
        f"free devices now (free devices per node: {per_node(free)})",
    )


def _may_start_now(
    session: Session, spec: JobCreate, who: Submitter, quota: Quota, may_start_now: bool
) -> bool:
    """Whether the reservation step tries its devices now: not for a job that must wait (held,
    dependencies, a sweep's member) or that its owner's device quota would exceed. `queue:
    false` must start now: over the quota it is refused, as it would never be placed."""
    if spec.queue and (not may_start_now or spec.hold or spec.depends_on):
        return False
    within = _quota_allows(session, who, spec, quota)
    if not within and not spec.queue:
        raise Conflict(
            message=f"quota: {who.owner} may hold {quota.max_devices} devices at once; "
            f"{spec.world_size} more is over it (queue: false: nothing waits)",
            field="queue",
            code="quota_exceeded",
        )
    return within


def _quota_allows(session: Session, who: Submitter, spec: JobCreate, quota: Quota) -> bool:
    if quota.max_devices is None:
        return True
    held = session.scalar(
        select(func.count())
        .select_from(Allocation)
        .join(Job, Job.id == Allocation.job_id)
        .where(Job.owner == who.owner, Allocation.released_at.is_(None))
    )
    return int(held or 0) + spec.world_size <= quota.max_devices


def _reserve_now(
    session: Session,
    job: Job,
    spec: JobCreate,
    devices: list[Chosen],
    estimate: int | None,
    live: Readings | None,
) -> None:
    if devices:
        reserve(session, job, devices)
        return

    def fits(device: Device) -> bool:
        return estimate is None or not short_devices(
            [(device.node, device.uuid)], estimate, live or {}
        )

    reserve_count(session, job, spec.world_size, fits=fits)


def get_job(session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise JobNotFound(job_id)
    return job


def list_jobs(
    session: Session, *, statuses: Sequence[str] | None, limit: int, offset: int
) -> tuple[list[Job], int]:
    query = select(Job)
    if statuses:
        query = query.where(Job.status.in_(statuses))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    jobs = session.scalars(query.order_by(Job.id.desc()).limit(limit).offset(offset)).all()
    return list(jobs), total


def cancel_job(session: Session, job_id: int) -> Job:
    """A queued job is cancelled at once; a starting or running one is asked to stop, and its
    worker finishes the transition after the final checkpoint."""
    job = job_state.lock_job(session, job_id)
    status = JobStatus(job.status)
    if status is JobStatus.queued:
        return job_state.transition(session, job_id, JobStatus.cancelled)
    if status in job_state.TERMINAL:
        raise InvalidTransition(job_id, status, JobStatus.cancelled)
    if job.cancel_requested_at is None:
        job.cancel_requested_at = func.now()
        session.flush()
        session.refresh(job)
    return job


@dataclass(frozen=True)
class Cancelled:
    """What a cancel of many jobs did: ended now (they waited), and asked to stop (running)."""

    ended: list[int]
    stopping: list[int]


def cancel_jobs(session: Session, *where: ColumnElement[bool]) -> Cancelled:
    """cancel_job for every job matching `where` that has not ended (a sweep's members), in a
    few statements whatever their number: all locked at once, the waiting ones cancelled in
    one (job_state.cancel_queued), the starting and running ones asked to stop in another
    (their workers stop them after a final checkpoint, as a single cancel's)."""
    locked = job_state.lock_jobs(session, *where)
    waiting = [j for j, status in locked.items() if status is JobStatus.queued]
    active = [j for j, status in locked.items() if status is not JobStatus.queued]
    ended = job_state.cancel_queued(session, waiting)
    if active:
        session.execute(
            update(Job)
            .where(Job.id.in_(active), Job.cancel_requested_at.is_(None))
            .values(cancel_requested_at=func.now()),
            execution_options={"synchronize_session": "fetch"},
        )
    session.flush()
    return Cancelled(ended=ended, stopping=active)
