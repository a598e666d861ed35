from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.schemas.jobs import NAME_PATTERN


class RecommendRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    bytes_per_device: int = Field(ge=0, le=2**50, description="the estimate's bytes_per_device")
    count: int = Field(ge=1, le=64)
    strategy: Literal["packed", "spread", "memory"] = "packed"
    node: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    safety_margin_bytes: int | None = Field(
        default=None,
        ge=0,
        le=2**50,
        description="default: max(512 MiB, 5 % of the device); not read with `share`",
    )
    share: Literal["memory"] | None = Field(
        default=None,
        description="the job shares devices by memory (docs/sharing.md): devices are judged by "
        "their reservation room against its estimate plus the CUDA context reserve, on one node",
    )


class RecommendedDevice(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    node: str
    uuid: str
    index: int
    name: str
    memory_total_bytes: int
    memory_free_bytes: int | None
    reservation_room_bytes: int | None = Field(
        default=None,
        description="what a sharing job could still reserve on it (as GET /api/gpus says)",
    )


class ExcludedDevice(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    node: str
    uuid: str
    index: int
    reason: Literal[
        "other_node",
        "held_by_job",
        "external_process",
        "stale_telemetry",
        "insufficient_memory",
        "shared",
        "sharing_not_allowed",
    ] = Field(
        description="shared: sharing jobs hold it (the message says whether this job could "
        "join them as a share); sharing_not_allowed: with `share`, its node does not allow "
        "sharing, or shares only between one user's jobs and another user's share it"
    )
    message: str


class RecommendationPublic(BaseModel):
    # Read from a `services.placement.recommend.Recommendation`: `model_validate(result)`.

    model_config = ConfigDict(from_attributes=True)

    devices: list[RecommendedDevice] = Field(description="in rank order; empty when none fit")
    excluded: list[ExcludedDevice]
    enough: bool = Field(description="whether `count` devices fit")
    message: str
    share_bytes_per_device: int = Field(
        description="what the job would reserve on each device as a share: bytes_per_device "
        "plus the CUDA context reserve"
    )
    could_share: bool = Field(
        description="the job could start now by sharing `share_devices` (on one node)"
    )
    share_devices: list[RecommendedDevice] = Field(
        description="where it would share now, the tightest room first when packed; empty "
        "when it could not"
    )
    share_message: str | None = Field(
        description="'could start now by sharing instead of waiting: node/1 (3.0 GiB free of "
        "reservations)'; null when it could not"
    )
