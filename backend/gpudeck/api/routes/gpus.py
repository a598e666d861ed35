from __future__ import annotations

from fastapi import APIRouter

from gpudeck.api.deps import SessionDep
from gpudeck.schemas.gpus import ExternalProcess, GpuPublic, Holder, NodePublic
from gpudeck.services.inventory import list_devices_with_holders, list_nodes

router = APIRouter(prefix="/api", tags=["gpus"])


@router.get("/gpus")
def list_gpus(session: SessionDep) -> list[GpuPublic]:
    return [
        GpuPublic(
            node=device.node,
            uuid=device.uuid,
            index=device.index,
            name=device.name,
            source=device.source,  # type: ignore[arg-type]
            memory_total_bytes=device.memory_total_bytes,
            held_by=Holder(job_id=job.id, job_name=job.name, owner=job.owner) if job else None,
            external_processes=[ExternalProcess(**p) for p in device.external_processes],
            last_seen_at=device.last_seen_at,
        )
        for device, job in list_devices_with_holders(session)
    ]


@router.get("/nodes")
def get_nodes(session: SessionDep) -> list[NodePublic]:
    return [
        NodePublic(
            name=node.name,
            source=node.source,  # type: ignore[arg-type]
            device_count=count,
            registered_at=node.registered_at,
            last_seen_at=node.last_seen_at,
        )
        for node, count in list_nodes(session)
    ]
