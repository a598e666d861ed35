from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class QuotaUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    max_devices: int | None = Field(ge=1, le=4096, description="devices at once; null: any")
    max_queued_jobs: int | None = Field(
        ge=0, le=1_000_000, description="jobs waiting at once; null: any"
    )


class QuotaPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    user_name: str
    max_devices: int | None
    max_queued_jobs: int | None
