"""The device inventory: what each node's provider reports, upserted by (node, uuid)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, Node
from gpudeck.telemetry.devices import DeviceInfo

# A node's sampler rewrites its row at least every telemetry.sampler.INVENTORY_REFRESH_S (30 s):
# a node silent for three of those is offline, and its devices cannot be chosen.
OFFLINE_AFTER_S = 90.0


def upsert_inventory(
    session: Session,
    node: str,
    source: str,
    devices: Sequence[DeviceInfo],
    *,
    address: str | None = None,
) -> None:
    now = func.now()
    node_stmt = insert(Node).values(name=node, source=source, address=address)
    seen: dict[str, Any] = {"source": source, "last_seen_at": now}
    if address is not None:
        seen["address"] = address
    session.execute(node_stmt.on_conflict_do_update(index_elements=[Node.name], set_=seen))
    # In uuid order, the order placements lock device rows in (the allocation trigger and
    # reserve_count): a sampler's upsert and a placement never wait on each other crosswise.
    for d in sorted(devices, key=lambda d: d.uuid):
        stmt = insert(Device).values(
            node=node,
            uuid=d.uuid,
            index=d.index,
            name=d.name,
            source=source,
            memory_total_bytes=d.memory_total_bytes,
            external_processes=d.external_processes,
        )
        session.execute(
            stmt.on_conflict_do_update(
                constraint="uq_devices_node_uuid",
                set_={
                    "index": stmt.excluded.index,
                    "name": stmt.excluded.name,
                    "source": stmt.excluded.source,
                    "memory_total_bytes": stmt.excluded.memory_total_bytes,
                    "external_processes": stmt.excluded.external_processes,
                    "last_seen_at": now,
                },
            )
        )
    session.flush()


def list_devices_with_holders(session: Session) -> list[tuple[Device, Job | None]]:
    rows = session.execute(
        select(Device, Job)
        .outerjoin(
            Allocation,
            (Allocation.node == Device.node)
            & (Allocation.gpu_uuid == Device.uuid)
            & Allocation.released_at.is_(None),
        )
        .outerjoin(Job, Job.id == Allocation.job_id)
        .order_by(Device.node, Device.index)
    )
    return [(device, job) for device, job in rows]


def list_nodes(
    session: Session,
) -> Sequence[Row[str, str, int, datetime, datetime, str | None, bool, bool, bool]]:
    """Each node's columns, its `device_count` and whether it is `online`, as named row
    attributes."""
    return session.execute(
        select(
            Node.name,
            Node.source,
            func.count(Device.id).label("device_count"),
            Node.registered_at,
            Node.last_seen_at,
            Node.address,
            Node.share_memory,
            Node.share_across_users,
            (Node.last_seen_at >= func.now() - timedelta(seconds=OFFLINE_AFTER_S)).label("online"),
        )
        .outerjoin(Device, Device.node == Node.name)
        .group_by(Node.name)
        .order_by(Node.name)
    ).all()
