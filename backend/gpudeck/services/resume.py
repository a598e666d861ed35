"""Resume: a new job that continues another from its newest complete checkpoint."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.engine.kinds import resumes_from_checkpoint
from gpudeck.models import Device, Job, JobStatus
from gpudeck.schemas.job_runs import JobResume
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services import job_state
from gpudeck.services.allocation import live_holders
from gpudeck.services.checkpoints import newest_complete
from gpudeck.services.errors import Conflict, InvalidTransition
from gpudeck.services.jobs import create_job, get_job


class NothingToResume(Conflict):
    def __init__(self, job_id: int) -> None:
        super().__init__(
            message=f"job {job_id} has no complete checkpoint to resume from",
            field="job_id",
            code="no_checkpoint",
        )


def _same_devices_if_free(session: Session, source: Job) -> list[DeviceRef] | None:
    uuids = [a.gpu_uuid for a in source.allocations]
    if not uuids or live_holders(session, source.node, uuids):
        return None
    devices = session.scalars(
        select(Device).where(Device.node == source.node, Device.uuid.in_(uuids))
    ).all()
    if len(devices) != len(uuids) or any(d.external_processes for d in devices):
        return None
    return [DeviceRef(node=source.node, uuid=uuid) for uuid in uuids]


def resume_job(
    session: Session, job_id: int, request: JobResume, *, owner: str, data_dir: Path
) -> Job:
    source = get_job(session, job_id)
    if JobStatus(source.status) not in job_state.TERMINAL:
        raise InvalidTransition(job_id, source.status, "resumed (it has not finished)")
    if resumes_from_checkpoint(source.kind) and newest_complete(session, job_id, data_dir) is None:
        raise NothingToResume(job_id)
    devices = request.devices
    count = request.count
    if devices is None and count is None:
        devices = _same_devices_if_free(session, source)
        count = None if devices is not None else source.world_size
    spec = JobCreate(
        kind=source.kind,
        config=source.config,
        devices=devices,
        count=count,
        node=source.node if devices is None else None,
        name=request.name or f"{source.name[:120]}-resume",
    )
    job = create_job(session, spec, owner=owner)
    job.resume_from_job_id = source.id
    session.flush()
    return job
