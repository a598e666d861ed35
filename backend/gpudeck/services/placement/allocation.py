"""Reserving devices for a job. Postgres is the only arbiter: the partial unique index on live
exclusive allocations, and the trigger that keeps shared ones within a device's usable memory and
apart from exclusive ones (migration 0021). Two transactions can never both hold a device, or
over-reserve one, whatever they read beforehand."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from psycopg.errors import ExclusionViolation, UniqueViolation
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job
from gpudeck.services.errors import BusyDevice, GpuBusy, NotEnoughDevices
from gpudeck.services.placement.packing import short_words
from gpudeck.services.placement.shared import NoRoomToShare, choose_shared_count

# A count request re-picks when a concurrent explicit request took a device it chose.
_COUNT_RETRIES = 5


@dataclass(frozen=True)
class Chosen:
    node: str
    uuid: str
    index: int


def live_holders(session: Session, node: str, uuids: Sequence[str]) -> dict[str, int]:
    rows = session.execute(
        select(Allocation.gpu_uuid, Allocation.job_id).where(
            Allocation.node == node,
            Allocation.gpu_uuid.in_(uuids),
            Allocation.released_at.is_(None),
        )
    )
    return {uuid: job_id for uuid, job_id in rows}


def _device_order(allocation: Allocation) -> tuple[str, str]:
    return (allocation.node, allocation.gpu_uuid)


def reserve(session: Session, job: Job, devices: Sequence[Chosen]) -> None:
    """Insert the job's allocations: whole devices, or for a sharing job its reservation on
    each (`reserved_bytes_per_device`). A device already held whole, or shared by others when
    the job wants it whole, raises GpuBusy naming its holder; a share that does not fit,
    NoRoomToShare naming the memory short."""
    try:
        with session.begin_nested():
            rows = [
                Allocation(
                    job_id=job.id,
                    node=d.node,
                    gpu_uuid=d.uuid,
                    gpu_index=d.index,
                    rank=r,
                    reserved_bytes=job.reserved_bytes_per_device,
                )
                for r, d in enumerate(devices)
            ]
            # Insert in one global order: two jobs wanting devices {1, 2} in opposite orders
            # would otherwise each wait on the other's uncommitted index entry or device-row
            # lock (a deadlock).
            ordered = sorted(rows, key=_device_order)
            session.add_all(ordered)
            session.flush()
    except IntegrityError as exc:
        if isinstance(exc.orig, ExclusionViolation) and _short_of_room(exc.orig):
            raise NoRoomToShare(_in_words(exc.orig, job, devices)) from None
        if not isinstance(exc.orig, UniqueViolation | ExclusionViolation):
            raise
        raise GpuBusy(busy_devices(devices, holders_by_node(session, devices))) from None


def _short_of_room(error: ExclusionViolation) -> bool:
    detail = error.diag.message_detail or ""
    return detail.startswith("room=") or detail == "unknown_device"


def _in_words(error: ExclusionViolation, job: Job, devices: Sequence[Chosen]) -> str:
    """The trigger's refusal as the queue says it: 'insufficient memory: device vm/1: ...'."""
    fields = dict(f.split("=", 1) for f in (error.diag.message_detail or "").split() if "=" in f)
    if "room" not in fields:
        return error.diag.message_primary or "the device cannot be shared"
    where = next((d for d in devices if (d.node, d.uuid) == (fields["node"], fields["uuid"])), None)
    index = where.index if where is not None else -1
    need = int(job.reserved_bytes_per_device or 0)
    return "insufficient memory: " + short_words(fields["node"], index, int(fields["room"]), need)


def holders_by_node(session: Session, devices: Sequence[Chosen]) -> dict[tuple[str, str], int]:
    """(node, uuid) -> the job holding it, for the held ones among `devices` (of any nodes)."""
    held: dict[tuple[str, str], int] = {}
    for node in dict.fromkeys(d.node for d in devices):
        uuids = [d.uuid for d in devices if d.node == node]
        held.update({(node, uuid): job for uuid, job in live_holders(session, node, uuids).items()})
    return held


def raise_if_held(session: Session, devices: Sequence[Chosen]) -> None:
    """GpuBusy naming each of `devices` that a live allocation holds, and its job."""
    holders = holders_by_node(session, devices)
    if holders:
        raise GpuBusy(busy_devices(devices, holders))


def busy_devices(
    devices: Sequence[Chosen], holders: dict[tuple[str, str], int]
) -> list[BusyDevice]:
    return [
        BusyDevice(d.node, d.uuid, d.index, holders[(d.node, d.uuid)], "held_by_job")
        for d in devices
        if (d.node, d.uuid) in holders
    ]


def reserve_count(
    session: Session, job: Job, count: int, *, fits: Callable[[Device], bool] | None = None
) -> list[Chosen]:
    """Pick `count` free devices on the job's node and reserve them, in this transaction.
    `fits` passes over devices without room for the job (live free memory).

    The node's device rows are locked first so concurrent count requests queue up instead of
    choosing the same devices and retrying; explicit requests still race only on the index.
    """
    for _ in range(_COUNT_RETRIES):
        if job.reserved_bytes_per_device is not None:
            picked = choose_shared_count(session, job, count)
            chosen = [Chosen(r.node, r.uuid, r.index) for r in picked]
            reserve(session, job, chosen)  # the trigger still decides: NoRoomToShare
            return chosen
        # Locked in (node, uuid) order, the order the allocation trigger locks them in.
        devices = session.scalars(
            select(Device).where(Device.node == job.node).order_by(Device.uuid).with_for_update()
        ).all()
        devices = sorted(devices, key=lambda d: d.index)
        holders = live_holders(session, job.node, [d.uuid for d in devices])
        idle = [d for d in devices if d.uuid not in holders and not d.external_processes]
        free = [d for d in idle if fits is None or fits(d)]
        if len(free) < count:
            raise NotEnoughDevices(count, len(free), job.node, lacking_memory=len(idle) - len(free))
        chosen = [Chosen(d.node, d.uuid, d.index) for d in free[:count]]
        try:
            reserve(session, job, chosen)
        except GpuBusy:
            continue
        return chosen
    raise NotEnoughDevices(count, 0, job.node)
