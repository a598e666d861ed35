"""The `linreg` kind as GPUDeck's registry sees it: config, code references, charts.

Importing this module must stay cheap and torch-free: the API imports it to validate requests.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from gpudeck.engine.kinds import Chart, JobKind, Series


class LinRegConfig(BaseModel):
    """Fit y = x·w on seeded Gaussian data; the true w is known, so the error is measurable."""

    model_config = ConfigDict(extra="forbid", strict=True)

    d_in: int = Field(default=64, ge=1, le=65_536, description="number of input features")
    batch_size: int = Field(default=256, ge=1, le=1_048_576, description="global batch size")
    steps: int = Field(default=200, ge=1, le=1_000_000, description="optimizer steps")
    lr: float = Field(default=0.05, gt=0, le=10, description="SGD learning rate")
    noise: float = Field(default=0.01, ge=0, le=10, description="std of the label noise")
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    metrics_interval: int = Field(default=10, ge=1, le=100_000, description="steps between reports")
    checkpoint_interval: int = Field(
        default=0, ge=0, le=1_000_000, description="steps between checkpoints (0: none on the way)"
    )
    checkpoint_at_end: StrictBool = Field(default=True, description="save the weights when done")


KIND = JobKind(
    name="linreg",
    # The kind API version this kind is written for: a number, not gpudeck's KIND_API_VERSION,
    # which moves with GPUDeck and would claim versions this code has never seen.
    api_version=2,
    description="Least-squares regression on seeded data (an example third-party kind)",
    config_model=LinRegConfig,
    train="gpudeck_kind_linreg.train:train",
    estimate_memory="gpudeck_kind_linreg.estimate:estimate",
    batch_size_field="batch_size",
    steps_field="steps",
    charts=(
        Chart("Loss", (Series("loss", "MSE"),), log_y=True),
        Chart("Weight error", (Series("weight_error", "|w - w*|"),)),
    ),
    summary_metrics=(Series("loss", "loss"), Series("weight_error", "weight error")),
)
