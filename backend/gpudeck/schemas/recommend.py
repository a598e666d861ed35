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
        default=None, ge=0, le=2**50, description="default: max(512 MiB, 5 % of the device)"
    )


class RecommendedDevice(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    node: str
    uuid: str
    index: int
    name: str
    memory_total_bytes: int
    memory_free_bytes: int | None


class ExcludedDevice(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    node: str
    uuid: str
    index: int
    reason: Literal[
        "other_node", "held_by_job", "external_process", "stale_telemetry", "insufficient_memory"
    ]
    message: str


class RecommendationPublic(BaseModel):
    # Read from a `services.placement.recommend.Recommendation`: `model_validate(result)`.

    model_config = ConfigDict(from_attributes=True)

    devices: list[RecommendedDevice] = Field(description="in rank order; empty when none fit")
    excluded: list[ExcludedDevice]
    enough: bool = Field(description="whether `count` devices fit")
    message: str
