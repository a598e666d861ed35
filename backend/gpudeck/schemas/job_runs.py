from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.schemas.jobs import NAME_PATTERN, DeviceRef


class MetricPoint(BaseModel):
    step: int
    metrics: dict[str, float]
    created_at: datetime


class MetricsPublic(BaseModel):
    items: list[MetricPoint]
    # Pass as `after_step` to get only newer points.
    last_step: int | None


class CheckpointFilePublic(BaseModel):
    name: str
    size_bytes: int
    url: str | None = Field(
        description="where to download it; null when it is on another node's disk (see location)"
    )


class CheckpointFields(BaseModel):
    """What a `models.Checkpoint` row says of itself (CheckpointPublic adds its files)."""

    model_config = ConfigDict(from_attributes=True)

    step: int
    path: str = Field(description="relative to the data directory")
    size_bytes: int
    loss: float | None
    created_at: datetime


class CheckpointPublic(CheckpointFields):
    files: list[CheckpointFilePublic]
    node: str | None = Field(description="the node whose disk holds it (null: an older row)")
    location: str | None = Field(
        description=(
            "node:directory, when this API cannot serve the files (they are on another node's "
            "disk): copy them from there"
        )
    )


class JobResume(BaseModel):
    """Continue a job from its newest complete checkpoint. Without devices or count: the same
    devices if they are free, else as many as before on the same node."""

    model_config = ConfigDict(extra="forbid", strict=True)

    devices: list[DeviceRef] | None = Field(default=None, min_length=1, max_length=64)
    count: int | None = Field(default=None, ge=1, le=64)
    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)


class JobSegmentPublic(BaseModel):
    """One stretch of a job on devices: a preempted job has one per start."""

    model_config = ConfigDict(from_attributes=True)

    started_at: datetime
    ended_at: datetime | None
    outcome: str | None = Field(description='"preempted" or the status it ended in; null: runs')
    reason: str | None = Field(examples=["preempted by job 12"])
    last_step: int | None = Field(description="its progress when it ended")
