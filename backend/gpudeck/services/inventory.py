"""The device inventory: what each node's provider reports, upserted by (node, uuid)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, Node


@dataclass(frozen=True)
class DeviceInfo:
    uuid: str
    index: int
    name: str
    memory_total_bytes: int
    external_processes: list[dict[str, int]] = field(default_factory=list)


def upsert_inventory(
    session: Session, node: str, source: str, devices: Sequence[DeviceInfo]
) -> None:
    now = func.now()
    node_stmt = insert(Node).values(name=node, source=source)
    session.execute(
        node_stmt.on_conflict_do_update(
            index_elements=[Node.name], set_={"source": source, "last_seen_at": now}
        )
    )
    for d in devices:
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


def list_nodes(session: Session) -> list[tuple[Node, int]]:
    rows = session.execute(
        select(Node, func.count(Device.id))
        .outerjoin(Device, Device.node == Node.name)
        .group_by(Node.name)
        .order_by(Node.name)
    )
    return [(node, count) for node, count in rows]
