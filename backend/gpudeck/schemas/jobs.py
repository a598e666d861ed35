from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpudeck.models import JobStatus

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:-]*$"
UUID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"


class DeviceRef(BaseModel):
    """A device by uuid, or by its NVML index on a node. `node` may be left out on one node."""

    model_config = ConfigDict(extra="forbid")

    node: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    uuid: str | None = Field(default=None, min_length=1, max_length=96, pattern=UUID_PATTERN)
    index: int | None = Field(default=None, ge=0, le=63)

    @model_validator(mode="after")
    def _uuid_or_index(self) -> DeviceRef:
        if (self.uuid is None) == (self.index is None):
            raise ValueError("give exactly one of uuid or index")
        return self


class JobCreate(BaseModel):
    """A job: a registered kind, that kind's config, and its devices (a list, or a count)."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(min_length=1, max_length=64, examples=["sae"])
    config: dict[str, Any] = Field(
        default_factory=dict, description="the kind's config; see GET /api/kinds"
    )
    devices: list[DeviceRef] | None = Field(default=None, min_length=1, max_length=64)
    count: int | None = Field(default=None, ge=1, le=64, description="let GPUDeck pick devices")
    node: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=NAME_PATTERN, description="for count"
    )
    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    force: bool = Field(default=False, description="skip the free-memory check")

    @model_validator(mode="after")
    def _devices_or_count(self) -> JobCreate:
        if (self.devices is None) == (self.count is None):
            raise ValueError("give exactly one of devices or count")
        return self

    @property
    def world_size(self) -> int:
        return len(self.devices) if self.devices is not None else int(self.count or 0)


class AllocatedDevice(BaseModel):
    node: str
    uuid: str
    index: int
    rank: int


class Progress(BaseModel):
    step: int
    total: int | None


class JobPublic(BaseModel):
    id: int
    name: str
    kind: str
    status: JobStatus
    config: dict[str, Any]
    owner: str
    node: str
    world_size: int
    devices: list[AllocatedDevice]
    progress: Progress
    error: str | None
    resume_from_job_id: int | None
    estimate_bytes_per_device: int | None
    peak_memory_bytes: int | None
    cancel_requested: bool
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None


class JobsPublic(BaseModel):
    items: list[JobPublic]
    total: int
    limit: int
    offset: int


class JobKindPublic(BaseModel):
    name: str
    description: str
    config_schema: dict[str, Any]
    defaults: dict[str, Any]


StatusFilter = Literal["queued", "starting", "running", "succeeded", "failed", "cancelled", "lost"]


def job_public(job: Any) -> JobPublic:
    """A `models.Job` as the API shows it."""
    return JobPublic(
        id=job.id,
        name=job.name,
        kind=job.kind,
        status=job.status,
        config=job.config,
        owner=job.owner,
        node=job.node,
        world_size=job.world_size,
        devices=[
            AllocatedDevice(node=a.node, uuid=a.gpu_uuid, index=a.gpu_index, rank=a.rank)
            for a in job.allocations
        ],
        progress=Progress(step=job.progress_step, total=job.progress_total),
        error=job.error,
        resume_from_job_id=job.resume_from_job_id,
        estimate_bytes_per_device=job.estimate_bytes_per_device,
        peak_memory_bytes=job.peak_memory_bytes,
        cancel_requested=job.cancel_requested_at is not None,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        heartbeat_at=job.heartbeat_at,
    )
