"""A kind written for a kind API version newer than this GPUDeck's: refused at registration."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gpudeck.engine.kind_api import KIND_API_VERSION
from gpudeck.engine.kinds import JobKind


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid")


KIND = JobKind(
    name="from_the_future",
    description="written for the next kind API",
    config_model=Empty,
    train="kind_versions.too_new:train",
    api_version=KIND_API_VERSION + 1,
)
