"""What a user chooses for a map job; a kind embeds `MapOptions` in its config model."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Strategy = Literal["balanced", "memory", "sequential", "round_robin", "dynamic"]


class MapOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    strategy: Strategy = Field(
        default="balanced", description="how chunks are shared among devices (docs/map-jobs.md)"
    )
    chunk_size: int = Field(
        default=256,
        ge=1,
        le=10**9,
        description="items per chunk: the unit of output, resume and sharing",
    )
    batch_size: Annotated[int, Field(ge=1, le=10**9)] | Literal["auto"] = Field(
        default=32, description="items per forward pass, or `auto`: the largest that fits"
    )
    min_items_per_device: int = Field(
        default=1, ge=1, le=10**12, description="fewer items than this per device: use fewer"
    )
    max_items_per_device: int | None = Field(
        default=None, ge=1, le=10**12, description="`sequential`: fill a device up to this"
    )
    free_memory_bytes: list[Annotated[int, Field(ge=0)]] | None = Field(
        default=None,
        max_length=1024,
        description="`memory`: each rank's free memory; default: measured on each device",
    )
