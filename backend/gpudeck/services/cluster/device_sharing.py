"""What the board shows of sharing a device by memory (docs/sharing.md): each device's
reservations by job, the room a sharing job could still reserve, and whether its node allows
sharing at all. Read for `GET /api/gpus`; Postgres's trigger (migration 0021) alone decides."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, JobStatus, Node
from gpudeck.schemas.gpus import Reservation
from gpudeck.services.jobs import state as job_state

DeviceKey = tuple[str, str]  # (node, uuid)


@dataclass(frozen=True)
class DeviceSharing:
    reservations: list[Reservation] = field(default_factory=list)
    # Usable memory when idle (the one margin rule, in SQL as the trigger reads it) less the
    # reservations; None where no sharing job may join.
    room_bytes: int | None = None
    node_shares: bool = False


def live_reservations(session: Session) -> dict[DeviceKey, list[Reservation]]:
    """Every live shared allocation, by device, in job id order."""
    rows = session.execute(
        select(
            Allocation.node,
            Allocation.gpu_uuid,
            Allocation.reserved_bytes,
            Job.id,
            Job.name,
            Job.owner,
            Job.status,
        )
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.released_at.is_(None), Allocation.reserved_bytes.is_not(None))
        .order_by(Allocation.node, Allocation.gpu_uuid, Job.id)
    )
    out: dict[DeviceKey, list[Reservation]] = defaultdict(list)
    for node, uuid, reserved, job_id, name, owner, status in rows:
        ended = JobStatus(status) in job_state.TERMINAL
        out[(node, uuid)].append(
            Reservation(
                job_id=job_id,
                job_name=name,
                owner=owner,
                reserved_bytes=reserved or 0,  # never NULL: the WHERE above
                releasing=ended,
            )
        )
    return out


def _held_whole(session: Session) -> set[DeviceKey]:
    rows = session.execute(
        select(Allocation.node, Allocation.gpu_uuid).where(
            Allocation.released_at.is_(None), Allocation.reserved_bytes.is_(None)
        )
    )
    return {(node, uuid) for node, uuid in rows}


def sharing_by_device(session: Session) -> dict[DeviceKey, DeviceSharing]:
    """Each device of the inventory with its reservations and its room for a sharing job.

    External processes are judged as the inventory last stored them (what placement reads)."""
    reservations = live_reservations(session)
    whole = _held_whole(session)
    rows = session.execute(
        select(
            Device.node,
            Device.uuid,
            Device.external_processes,
            Node.share_memory,
            func.gpudeck_usable_when_idle(Device.memory_total_bytes),
        ).join(Node, Node.name == Device.node)
    )
    out = {}
    for node, uuid, external, shares, usable in rows:
        key = (node, uuid)
        held = reservations.get(key, [])
        open_ = bool(shares) and key not in whole and not external
        room = int(usable) - sum(r.reserved_bytes for r in held) if open_ else None
        out[key] = DeviceSharing(held, room, bool(shares))
    return out
