"""The `oldreg` kind as version 1's docs had a kind author write it: no `api_version`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.engine.kinds import Chart, JobKind, Series


class OldRegConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    d_in: int = Field(default=8, ge=1, le=4096)
    batch_size: int = Field(default=64, ge=1, le=65_536)
    steps: int = Field(default=30, ge=1, le=1_000_000)
    lr: float = Field(default=0.05, gt=0, le=10)
    seed: int = Field(default=0, ge=0)
    metrics_interval: int = Field(default=10, ge=1)
    checkpoint_interval: int = Field(default=10, ge=1)


KIND = JobKind(
    name="oldreg",
    description="Least-squares regression written for kind API version 1",
    config_model=OldRegConfig,
    train="gpudeck_kind_oldreg.train:train",
    batch_size_field="batch_size",
    steps_field="steps",
    charts=(Chart("Loss", (Series("loss", "MSE"),), log_y=True),),
    summary_metrics=(Series("loss", "loss"),),
)
