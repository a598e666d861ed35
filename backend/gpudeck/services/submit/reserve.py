"""The reservation step of a submit: a job that may start now takes its devices in the submit's
transaction; the rest wait for the scheduler. Takes a Session, never commits."""

from __future__ import annotations

import functools
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.errors import (
    Conflict,
    GpuBusy,
    NotEnoughDevices,
)
from gpudeck.services.jobs import state as job_state
from gpudeck.services.placement.allocation import (
    Chosen,
    holders_by_node,
    raise_if_held,
    reserve,
    reserve_count,
)
from gpudeck.services.placement.live_memory import InsufficientMemory, Readings, short_devices
from gpudeck.services.placement.shared import NoRoomToShare
from gpudeck.services.queue import snapshot
from gpudeck.services.queue import waiting as queue_waiting
from gpudeck.services.queue.plan import Quota, choose_spread
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.submit.placement_request import Placement, not_enough_across, per_node


def reserve_at_submit(
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
    # A sharing job is judged by its reservation against the others' (the database's
    # trigger), not by live free memory, which its neighbours' use moves from sample to sample.
    shared = job.reserved_bytes_per_device is not None
    judged = estimate is not None and not spec.force and not shared

    @functools.cache
    def live() -> Readings | None:  # read at most once, and only for a start now
        return read_live() if judged else None

    devices = list(placement.named)
    if placement.spread is not None and shared:
        starts = False  # the scheduler packs it on the node it chooses
    if placement.spread is not None and starts:
        readings = live()
        fit_to = estimate if readings is not None else None
        devices = _spread_now(session, placement, spec, fit_to, readings)
        if not devices and not spec.queue:
            raise _no_room_across(session, placement, spec)
        job.node = devices[0].node if devices else job.node
        starts = bool(devices)
    nodes = list(dict.fromkeys(d.node for d in devices)) or [job.node]
    starts = starts and not queue_waiting.waiting_on_nodes(session, nodes)
    if starts and not devices and not shared:
        # An unlocked look first: with too few devices free, a queueing count request need not
        # wait for the device-row locks to find that out.
        starts = snapshot.free_devices(session, job.node) >= spec.world_size
    if starts or not spec.queue:
        _try_reserve(session, job, spec, devices, estimate, live)
    if job.id is None:  # never reserved: it holds nothing (no reload, a queued submit is hot)
        job.allocations = []
        session.add(job)
        session.flush()
    else:
        session.refresh(job, ["allocations"])
    if not job.allocations:
        job_state.wake_scheduler(session, arrival=True)  # it waits: the scheduler places it


def _try_reserve(
    session: Session,
    job: Job,
    spec: JobCreate,
    devices: list[Chosen],
    estimate: int | None,
    live: Callable[[], Readings | None],
) -> None:
    """Insert the job and reserve its devices now; a conflict leaves it to wait (`queue`) or
    is the answer (`queue: false`)."""
    try:
        # Fast refusal for the common conflict, before any insert; the unique index still
        # decides every race this read cannot see.
        if devices and job.reserved_bytes_per_device is None:
            raise_if_held(session, devices)
            short = short_devices([(d.node, d.uuid) for d in devices], estimate or 0, live() or {})
            if live() is not None and short:
                raise InsufficientMemory(int(estimate or 0), short)
        session.add(job)
        session.flush()
        # In a savepoint: a count that finds no room gives back the device-row locks at
        # once, instead of holding them (and every concurrent submit) until commit.
        with session.begin_nested():
            fit_to = estimate if live() is not None else None
            _reserve_now(session, job, spec, devices, fit_to, live())
    except (GpuBusy, NotEnoughDevices, InsufficientMemory, NoRoomToShare):
        if not spec.queue:
            raise


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
    devs = [snapshot.plan_device(d, held, readings) for d in inventory]
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


def starts_now(
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
