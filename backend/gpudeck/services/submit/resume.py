"""Resume: a new job that continues another from its newest complete checkpoint."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.engine.kinds import resumes_from_checkpoint
from gpudeck.models import Device, Job, JobStatus
from gpudeck.schemas.job_runs import JobResume
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services.errors import Conflict, InvalidTransition
from gpudeck.services.jobs import state as job_state
from gpudeck.services.jobs.checkpoints import newest_complete
from gpudeck.services.jobs.lookup import get_job
from gpudeck.services.placement.allocation import live_holders
from gpudeck.services.submit.submission import create_job


class NothingToResume(Conflict):
    def __init__(self, job_id: int) -> None:
        super().__init__(
            message=f"job {job_id} has no complete checkpoint to resume from",
            field="job_id",
            code="no_checkpoint",
        )


class NotResumable(Conflict):
    """One rule for the API, the CLI and the dashboard: a job is resumed once (a second resume
    would fork its run; resume the resumed one), and a job that trains from checkpoints only
    when it stopped before its end (a succeeded one ran all its steps: run it again)."""

    def __init__(self, job_id: int, why: str) -> None:
        super().__init__(message=f"job {job_id} {why}", field="job_id", code="not_resumable")


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
    session: Session,
    job_id: int,
    request: JobResume,
    *,
    owner: str,
    data_dir: Path,
    may_start_now: bool = True,
) -> Job:
    get_job(session, job_id)  # 404 first
    source = job_state.lock_job(session, job_id)  # two resumes at once: one waits, then sees
    if JobStatus(source.status) not in job_state.TERMINAL:
        raise InvalidTransition(job_id, source.status, "resumed (it has not finished)")
    if source.status == JobStatus.succeeded and resumes_from_checkpoint(source.kind):
        # A map job that succeeded may be resumed: it writes again only the chunks its
        # output lacks (one deleted or damaged since).
        raise NotResumable(
            job_id, "succeeded: it ran all its steps; run it again with more steps instead"
        )
    already = session.scalar(
        select(Job.id).where(Job.resume_from_job_id == job_id).order_by(Job.id.desc()).limit(1)
    )
    if already is not None:
        raise NotResumable(
            job_id,
            f"was resumed already, by job {already}: resume that one, which has the "
            "newer checkpoints",
        )
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
    job = create_job(session, spec, owner=owner, may_start_now=may_start_now)
    job.resume_from_job_id = source.id
    session.flush()
    return job
