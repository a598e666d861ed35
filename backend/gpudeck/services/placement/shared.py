"""Reserving a share of devices for a job that shares by memory (`jobs.share = 'memory'`).

The rows go through `allocation.reserve`, the one insert: Postgres's trigger (migration 0021)
refuses, under the device row's lock, a share that would take a device past its usable memory or
sit beside a whole-device allocation. What is read here only chooses where to try."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, Node
from gpudeck.services.errors import Conflict
from gpudeck.services.placement.packing import Room, best_fit, short_reason
from gpudeck.services.placement.recommend import usable_when_idle


class NoRoomToShare(Conflict):
    """A sharing job whose reservation no device has room for now."""

    def __init__(self, reason: str) -> None:
        super().__init__(message=reason, field="share", code="insufficient_memory")


def sharing_nodes(session: Session, nodes: Sequence[str]) -> dict[str, tuple[bool, bool]]:
    """node -> (allows sharing, across users) for the named nodes that exist."""
    rows = session.execute(
        select(Node.name, Node.share_memory, Node.share_across_users).where(Node.name.in_(nodes))
    )
    return {name: (bool(on), bool(across)) for name, on, across in rows}


def rooms(session: Session, devices: Sequence[Device], *, node_allows: bool) -> list[Room]:
    """Each device's room for a sharing job, from the live allocations on it."""
    keys = {(d.node, d.uuid) for d in devices}
    taken: dict[tuple[str, str], int] = defaultdict(int)
    owners: dict[tuple[str, str], set[str]] = defaultdict(set)
    whole: set[tuple[str, str]] = set()
    rows = session.execute(
        select(Allocation.node, Allocation.gpu_uuid, Allocation.reserved_bytes, Job.owner)
        .join(Job, Job.id == Allocation.job_id)
        .where(
            Allocation.released_at.is_(None),
            Allocation.node.in_({node for node, _ in keys}),
        )
    )
    for node, uuid, reserved, owner in rows:
        if reserved is None:
            whole.add((node, uuid))
        else:
            taken[(node, uuid)] += reserved
            owners[(node, uuid)].add(owner)
    return [
        Room(
            d.node,
            d.uuid,
            d.index,
            usable_when_idle(d.memory_total_bytes) - taken[(d.node, d.uuid)],
            frozenset(owners[(d.node, d.uuid)]),
            open=node_allows and (d.node, d.uuid) not in whole and not d.external_processes,
        )
        for d in devices
    ]


def choose_shared_count(session: Session, job: Job, count: int) -> list[Room]:
    """`count` devices of the job's node with room for its reservation, best fit, under the
    node's device-row locks (taken in (node, uuid) order, as the trigger takes them, so two
    placements never wait on each other crosswise); NoRoomToShare names the memory short."""
    need = int(job.reserved_bytes_per_device or 0)
    devices = session.scalars(
        select(Device).where(Device.node == job.node).order_by(Device.uuid).with_for_update()
    ).all()
    allows, across = sharing_nodes(session, [job.node]).get(job.node, (False, False))
    if not allows:
        raise NoRoomToShare(f"node {job.node} does not allow sharing devices")
    found = rooms(session, devices, node_allows=allows)
    chosen = best_fit(found, need, count, job.owner, across)
    if chosen is None:
        raise NoRoomToShare(short_reason(found, need, job.owner, across))
    return chosen
