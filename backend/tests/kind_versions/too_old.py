"""A kind written for a kind API version older than any this GPUDeck runs: refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gpudeck.engine.kind_api import SUPPORTED_KIND_API_VERSIONS
from gpudeck.engine.kinds import JobKind


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid")


KIND = JobKind(
    name="from_the_past",
    description="written for a kind API no longer run",
    config_model=Empty,
    train="kind_versions.too_old:train",
    api_version=SUPPORTED_KIND_API_VERSIONS[0] - 1,
)
