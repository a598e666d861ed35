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
    url: str


class CheckpointPublic(BaseModel):
    step: int
    path: str = Field(description="relative to the data directory")
    size_bytes: int
    loss: float | None
    created_at: datetime
    files: list[CheckpointFilePublic]


class JobResume(BaseModel):
    """Continue a job from its newest complete checkpoint. Without devices or count: the same
    devices if they are free, else as many as before on the same node."""

    model_config = ConfigDict(extra="forbid")

    devices: list[DeviceRef] | None = Field(default=None, min_length=1, max_length=64)
    count: int | None = Field(default=None, ge=1, le=64)
    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
