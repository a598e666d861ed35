"""The `sae` job kind's configuration: every knob a user sets for one SAE training run.

Validated by the API at submit time and again by the trainer, so a bad value is a 422 naming
the field, never a crashed rank.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class SyntheticDataset(BaseModel):
    """Seeded superposition data with known ground-truth directions, so quality is measurable."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["synthetic"] = "synthetic"
    num_features: int = Field(default=512, ge=1, le=1_000_000, description="true features")
    active_features: float = Field(
        default=5.0, gt=0, le=1000, description="expected true features active per sample"
    )
    num_samples: int = Field(default=1_000_000, ge=1, le=10**10)


class FileDataset(BaseModel):
    """Activation vectors in a `.safetensors` or `.npy` file under the data directory, [N, d_in]."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["file"] = "file"
    path: str = Field(
        min_length=1,
        max_length=512,
        description="relative to <data_dir>/datasets; no '..' or absolute paths",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(safetensors|npy)$",
    )
    tensor_name: str | None = Field(
        default=None, max_length=128, description="tensor to read from a .safetensors file"
    )

    @field_validator("path")
    @classmethod
    def _inside_datasets(cls, value: str) -> str:
        # The pattern already refuses a leading '/'; this refuses climbing out with '..'.
        if ".." in value.split("/"):
            raise ValueError("must stay inside the datasets directory (no '..')")
        return value


Dataset = Annotated[SyntheticDataset | FileDataset, Field(discriminator="type")]


class DdpOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bucket_cap_mb: float = Field(default=25.0, gt=0, le=4096)
    gradient_as_bucket_view: bool = True
    broadcast_buffers: bool = False


class SaeConfig(BaseModel):
    """A standard ReLU SAE as SAELens defines it, trained with Adam.

    The defaults are the quality benchmark's config (tests/trainer/test_quality.py): on the
    default synthetic data they reach mmcs and explained variance above 0.9 in about 2 CPU
    minutes on 2 ranks.
    """

    model_config = ConfigDict(extra="forbid")

    d_in: int = Field(default=64, ge=1, le=65_536, description="activation width")
    d_sae: int = Field(default=2048, ge=1, le=4_194_304, description="dictionary size")
    l1_coefficient: float = Field(default=0.15, ge=0, le=1e6)
    lr: float = Field(default=4e-3, gt=0, le=10)
    adam_beta1: float = Field(default=0.9, ge=0, lt=1)
    adam_beta2: float = Field(default=0.999, ge=0, lt=1)
    batch_size: int = Field(
        default=512, ge=1, le=1_048_576, description="global batch, split evenly across ranks"
    )
    steps: int = Field(default=2400, ge=1, le=100_000_000)
    # Schedules, with SAELens's names and shapes; each is clipped to the run (see
    # `schedule_lengths`), so a short run with the defaults is valid, just shorter-scheduled.
    lr_warm_up_steps: int = Field(
        default=100, ge=0, le=100_000_000, description="lr rises linearly from lr/n to lr"
    )
    lr_decay_steps: int = Field(
        default=1200, ge=0, le=100_000_000, description="lr falls linearly to 0 over the last n"
    )
    l1_warm_up_steps: int = Field(
        default=0, ge=0, le=100_000_000, description="l1 coefficient rises linearly from 0"
    )
    dtype: Literal["float32", "bfloat16"] = "float32"
    grad_clip_norm: float | None = Field(default=None, gt=0, le=1e6)
    dataset: Dataset = Field(default_factory=SyntheticDataset)
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    checkpoint_interval: int = Field(default=500, ge=1, le=100_000_000, description="in steps")
    metrics_interval: int = Field(default=10, ge=1, le=1_000_000, description="in steps")
    ddp: DdpOptions = Field(default_factory=DdpOptions)

    @model_validator(mode="after")
    def _check_size(self) -> SaeConfig:
        # W_enc + W_dec alone; past this no device we know of holds even the parameters.
        if 2 * self.d_in * self.d_sae > 16 * 1024**3:
            raise ValueError("d_in * d_sae is too large: the weights alone exceed 64 GiB")
        return self

    def schedule_lengths(self) -> tuple[int, int, int]:
        """(lr warm-up, lr decay, l1 warm-up) in steps, clipped to the run.

        Warm-ups are cut to `steps`; the decay to what the lr warm-up leaves, so the two never
        overlap. A default config with few steps is therefore always valid.
        """
        lr_warm_up = min(self.lr_warm_up_steps, self.steps)
        lr_decay = min(self.lr_decay_steps, self.steps - lr_warm_up)
        return lr_warm_up, lr_decay, min(self.l1_warm_up_steps, self.steps)

    def lr_factor(self, step: int) -> float:
        """Multiplier of `lr` for 0-based step `step`, as SAELens's constant scheduler with
        warm-up and decay: (step+1)/warm_up while warming, (steps-step)/decay while decaying."""
        lr_warm_up, lr_decay, _ = self.schedule_lengths()
        if step < lr_warm_up:
            return (step + 1) / lr_warm_up
        if lr_decay and step >= self.steps - lr_decay:
            return max(0.0, (self.steps - step) / lr_decay)
        return 1.0

    def l1_coefficient_at(self, step: int) -> float:
        """The L1 coefficient of 0-based step `step`: SAELens's linear warm-up from 0."""
        _, _, l1_warm_up = self.schedule_lengths()
        if step < l1_warm_up:
            return self.l1_coefficient * step / l1_warm_up
        return self.l1_coefficient
