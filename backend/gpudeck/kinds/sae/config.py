"""The `sae` job kind's configuration: every knob a user sets for one SAE training run.

Validated by the API at submit time and again by the trainer, so a bad value is a 422 naming
the field, never a crashed rank.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class SyntheticDataset(BaseModel):
    """Seeded superposition data with known ground-truth directions, so quality is measurable."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["synthetic"] = "synthetic"
    num_features: int = Field(
        default=512,
        title="true features",
        ge=1,
        le=1_000_000,
        description="ground-truth directions",
    )
    active_features: float = Field(
        default=5.0,
        title="active per sample",
        gt=0,
        le=1000,
        description="expected true features active per sample",
    )
    num_samples: int = Field(default=1_000_000, title="samples", ge=1, le=10**10)


class FileDataset(BaseModel):
    """Activation vectors in a `.safetensors` or `.npy` file under the data directory, [N, d_in]."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["file"] = "file"
    path: str = Field(
        title="file",
        min_length=1,
        max_length=512,
        description="relative to <data_dir>/datasets; no '..' or absolute paths",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(safetensors|npy)$",
    )
    tensor_name: str | None = Field(
        default=None,
        title="tensor name",
        max_length=128,
        description="tensor to read from a .safetensors file",
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
    model_config = ConfigDict(extra="forbid", strict=True)

    bucket_cap_mb: float = Field(default=25.0, title="bucket cap (MB)", gt=0, le=4096)
    gradient_as_bucket_view: bool = True
    broadcast_buffers: bool = False


def uses_ddp(world_size: int) -> bool:
    """Whether a run of `world_size` ranks steps its model under DDP (and these options apply):
    only past one rank. A world of one steps the bare model: DDP there would only cost a
    communicator, its gradient buckets and an all-reduce a step. The trainer
    (`train.parallelize`, the held-out chunk) and the memory estimate (`memory.trace_spec`)
    both ask here, so the estimate traces the step the trainer runs."""
    return world_size > 1


Architecture = Literal["standard", "topk", "batchtopk", "jumprelu"]

# A schedule's length: a whole number is a count of steps, a float in [0, 1] a share of the
# run's steps (0.2 of a 1,500-step run is 300 steps), so one setting gives runs of any length
# the same shape. In strict mode JSON's 300 is an int and 0.2 a float; 300.0 is refused.
StepCount = Annotated[int, Field(ge=0, le=100_000_000)]
StepShare = Annotated[float, Field(ge=0, le=1)]
Steps = StepCount | StepShare

# What None means for the fields whose default depends on the architecture, measured on
# synthetic superposition data at two scales against SAELens (bench/sae_quality.py,
# docs/sae.md "Defaults per architecture"): a TopK warm-up for half the run (BatchTopK, and
# JumpReLU, where half beat a third at both scales), the frequency rule for the TopK family, and
# JumpReLU's L0 coefficient in units of the summed squared error of a row normalised to norm
# sqrt(d_in), which grows with d_in (so d_in / 64: 1 at d_in 64, where d_in / 128 left L0 at
# 10 for k 5).
TOPK_WARM_UP_SHARE: dict[str, float] = {"batchtopk": 0.5, "jumprelu": 0.5}
# The frequency rule's default for the TopK family: a latent firing at under this share of the
# average latent's rate (k / d_sae) is dead to AuxK. Relative, so it means the same at any k and
# d_sae: 1e-4 at k 5 and d_sae 512, 1e-5 at k 64 and d_sae 65,536 (docs/sae.md).
DEAD_SHARE_OF_MEAN_RATE = 0.01
# JumpReLU clips the gradient's norm at 1, as SAELens's trainer does on every step: with its
# warm-up, mmcs 0.985 against 0.975 at d_in 64 and 0.928 against 0.922 at d_in 512 (means of
# three seeds), fewer dead latents at both.
GRAD_CLIP_NORM: dict[str, float] = {"jumprelu": 1.0}
L0_COEFFICIENT_PER_D_IN = 1 / 64


# Hints for a form read from this schema (the dashboard's lib/schemaForm): a field another
# field's value decides the use of, and fields most runs leave alone. The API does not read
# them: a config may still set any field, whatever its architecture.
ADVANCED: dict[str, Any] = {"x-advanced": True}


def only_for(*architectures: Architecture, advanced: bool = False) -> dict[str, Any]:
    """The field matters only for these architectures: the form shows it for them alone."""
    return {"x-applies-when": {"architecture": list(architectures)}} | (
        ADVANCED if advanced else {}
    )


class SaeConfig(BaseModel):
    """One SAE training run: the architecture, its sparsity knob, the data and the schedule.

    The defaults make a sparse, useful SAE on any data scale: TopK with k 5 (so L0 is 5 by
    construction), d_sae 8 x d_in, activations rescaled to norm sqrt(d_in). On the default
    synthetic data (5 true features per sample) they recover the true features (mmcs > 0.95,
    see tests/kinds/sae/test_quality.py and docs/sae.md).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    architecture: Architecture = Field(
        default="topk",
        description=(
            "topk: exactly k latents per sample; batchtopk: k per sample on average over the"
            " batch; jumprelu: learned thresholds with an L0 penalty; standard: ReLU + L1"
        ),
    )
    k: int = Field(
        default=5,
        ge=1,
        le=65_536,
        description=(
            "topk/batchtopk: active latents per sample, the expected L0; jumprelu: k of its"
            " TopK warm-up"
        ),
        json_schema_extra=only_for("topk", "batchtopk", "jumprelu"),
    )
    d_in: int = Field(default=64, ge=1, le=65_536, description="activation width")
    d_sae: int = Field(
        default=512, ge=1, le=4_194_304, description="dictionary size; 8 to 32 x d_in is usual"
    )
    l1_coefficient: float = Field(
        # 3, not 5: at 5 ReLU's shrinkage held L0 below the data's true count and mmcs at 0.76
        # at d_in 512 (0.954 at 3) and 0.944 on the defaults-alone toy (0.983 at 3).
        default=3.0,
        title="L1 coefficient",
        ge=0,
        le=1e6,
        description="standard only: weight of the L1 penalty (on normalised activations)",
        json_schema_extra=only_for("standard"),
    )
    l0_coefficient: float | None = Field(
        default=None,
        title="L0 coefficient",
        ge=0,
        le=1e6,
        description=(
            "jumprelu only: weight of the L0 penalty (latents per sample); empty: d_in / 64,"
            " which with the TopK warm-up keeps L0 near k"
        ),
        json_schema_extra=only_for("jumprelu"),
    )
    jumprelu_bandwidth: float = Field(
        default=0.05,
        gt=0,
        le=100,
        description="jumprelu only: width of the straight-through window",
        json_schema_extra=only_for("jumprelu", advanced=True),
    )
    jumprelu_init_threshold: float = Field(
        default=0.01,
        ge=0,
        le=1e6,
        description="jumprelu only: initial threshold",
        json_schema_extra=only_for("jumprelu", advanced=True),
    )
    topk_warm_up_steps: Steps | None = Field(
        default=None,
        title="TopK warm-up",
        description=(
            "batchtopk, jumprelu: train the first n steps (or this share of the run) as a"
            " TopK SAE (the k largest pre-activations of each sample), then switch; jumprelu's"
            " thresholds then start at the running k x B-th largest pre-activation. Avoids"
            " the merged and dead latents these architectures settle into from a random"
            " start. Empty: half the run for batchtopk and jumprelu; 0: off"
        ),
        json_schema_extra=only_for("batchtopk", "jumprelu"),
    )
    aux_k_coefficient: float = Field(
        default=1.0,
        title="AuxK coefficient",
        ge=0,
        le=1e6,
        description="topk/batchtopk: weight of the loss that revives dead latents (Gao et al.)",
        json_schema_extra=only_for("topk", "batchtopk", advanced=True),
    )
    dead_window_steps: int = Field(
        default=200,
        title="AuxK: dead after",
        ge=1,
        le=100_000_000,
        description=(
            "topk/batchtopk: steps without firing after which AuxK treats a latent as dead and"
            " revives it (the dead count the job reports is over the last 1,000 steps, as"
            " SAELens's, and on held-out rows)"
        ),
        json_schema_extra=only_for("topk", "batchtopk", advanced=True),
    )
    dead_min_frequency: float | None = Field(
        default=None,
        title="dead below frequency",
        ge=0,
        le=1,
        description=(
            "topk/batchtopk: a latent firing on fewer than this fraction of samples (running"
            " average over about 100 steps) also counts as dead for AuxK; 0: only 'AuxK:"
            " dead after'. Empty: 1 % of the average latent's rate, k / d_sae / 100"
        ),
        json_schema_extra=only_for("topk", "batchtopk", advanced=True),
    )
    batchtopk_threshold_lr: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="batchtopk: rate of the running threshold saved for inference",
        json_schema_extra=only_for("batchtopk", advanced=True),
    )
    normalize_activations: Literal["none", "expected_average_only_in"] = Field(
        default="expected_average_only_in",
        description=(
            "expected_average_only_in: scale inputs so their mean norm is about sqrt(d_in)"
            " (a power of 2, folded into the saved weights), so defaults work at any scale"
        ),
        json_schema_extra=ADVANCED,
    )
    b_dec_init: Literal["zeros", "mean"] = Field(
        default="mean",
        description="decoder bias starts at 0 or at the data mean",
        json_schema_extra=ADVANCED,
    )
    sparse_decoder: bool = Field(
        default=True,
        description=(
            "topk, batchtopk: decode by gathering the active decoder rows and give gradient "
            "only to the active latents, instead of dense matmuls (same result, faster); "
            "float32 only: bfloat16 decodes densely"
        ),
        json_schema_extra=only_for("topk", "batchtopk", advanced=True),
    )
    lr: float = Field(default=4e-3, title="learning rate", gt=0, le=10)
    adam_beta1: float = Field(default=0.9, ge=0, lt=1, json_schema_extra=ADVANCED)
    adam_beta2: float = Field(default=0.999, ge=0, lt=1, json_schema_extra=ADVANCED)
    batch_size: int = Field(
        default=512,
        title="batch size",
        ge=1,
        le=1_048_576,
        description="global batch, split evenly across ranks",
    )
    steps: int = Field(default=2400, ge=1, le=100_000_000)
    # Schedules, with SAELens's names and shapes; a float is a share of `steps`, a whole
    # number a count; each is clipped to the run (see `schedule_lengths`).
    lr_warm_up_steps: Steps = Field(
        default=0.05,
        description=(
            "lr rises linearly from lr/n to lr over the first n steps; a float in [0, 1] is a"
            " share of the run (0.05: the first 5 %)"
        ),
        json_schema_extra=ADVANCED,
    )
    lr_decay_steps: Steps = Field(
        default=0.2,
        description=(
            "lr falls linearly to 0 over the last n steps; a float in [0, 1] is a share of"
            " the run (0.2: the last 20 %)"
        ),
        json_schema_extra=ADVANCED,
    )
    l1_warm_up_steps: Steps = Field(
        default=0,
        description=(
            "the L1/L0 coefficient rises linearly from 0 over the first n steps; a float in"
            " [0, 1] is a share of the run"
        ),
        json_schema_extra=only_for("standard", "jumprelu", advanced=True),
    )
    dtype: Literal["float32", "bfloat16"] = "float32"
    grad_clip_norm: float | None = Field(
        default=None,
        ge=0,
        le=1e6,
        description=(
            "clip the gradient's norm at this every step; 0: never. Empty: 1 for jumprelu (as"
            " SAELens clips; better at both data scales measured), never for the others"
        ),
        json_schema_extra=ADVANCED,
    )
    dataset: Dataset = Field(default_factory=SyntheticDataset, title="dataset")
    seed: int = Field(default=0, ge=0, le=2**32 - 1, json_schema_extra=ADVANCED)
    checkpoint_interval: int = Field(
        default=500, title="checkpoint every", ge=1, le=100_000_000, description="in steps"
    )
    metrics_interval: int = Field(
        default=10, title="metrics every", ge=1, le=1_000_000, description="in steps"
    )
    ddp: DdpOptions = Field(default_factory=DdpOptions, title="DDP", json_schema_extra=ADVANCED)

    @model_validator(mode="after")
    def _check_size(self) -> SaeConfig:
        # W_enc + W_dec alone; past this no device we know of holds even the parameters.
        if 2 * self.d_in * self.d_sae > 16 * 1024**3:
            raise ValueError("d_in * d_sae is too large: the weights alone exceed 64 GiB")
        if self.architecture in ("topk", "batchtopk") and self.k > self.d_sae:
            raise ValueError(f"k ({self.k}) must be at most d_sae ({self.d_sae})")
        return self

    @property
    def sparse_kernels(self) -> bool:
        """Whether the TopK family runs the sparse decoder: asked for, and in float32. PyTorch
        has no bfloat16 kernel for embedding_bag's per-sample-weight backward on CUDA, nor for
        the CSR product on the CPU, so bfloat16 decodes densely (the same result)."""
        return self.sparse_decoder and self.dtype == "float32"

    @property
    def coefficient_name(self) -> str:
        """The sparsity loss's metric name (SAELens's): l1_loss or l0_loss; '' for TopK."""
        return {"standard": "l1_loss", "jumprelu": "l0_loss"}.get(self.architecture, "")

    @property
    def l0_coefficient_value(self) -> float:
        """The L0 coefficient JumpReLU trains with: the field, or d_in / 64 when empty."""
        if self.l0_coefficient is not None:
            return self.l0_coefficient
        return L0_COEFFICIENT_PER_D_IN * self.d_in

    @property
    def grad_clip_norm_value(self) -> float | None:
        """The norm the trainer clips the gradient at (None: it does not): the field (0: never),
        or the architecture's default when empty."""
        if self.grad_clip_norm is None:
            return GRAD_CLIP_NORM.get(self.architecture)
        return self.grad_clip_norm or None

    @property
    def dead_min_frequency_value(self) -> float:
        """The frequency rule's minimum: the field, or the architecture's default."""
        if self.dead_min_frequency is not None:
            return self.dead_min_frequency
        return self.dead_min_frequency_default

    @property
    def dead_min_frequency_default(self) -> float:
        """What an empty dead_min_frequency means: for the TopK family 1 % of the average
        latent's rate (DEAD_SHARE_OF_MEAN_RATE), else 0 (no AuxK)."""
        if self.architecture in ("topk", "batchtopk"):
            return DEAD_SHARE_OF_MEAN_RATE * self.k / self.d_sae
        return 0.0

    @property
    def sparsity_coefficient(self) -> float:
        if self.architecture == "jumprelu":
            return self.l0_coefficient_value
        return self.l1_coefficient

    def in_steps(self, length: int | float) -> int:
        """A schedule length in steps: a count as is, a share of the run rounded, both
        clipped to the run."""
        steps = round(length * self.steps) if isinstance(length, float) else length
        return min(steps, self.steps)

    def topk_warm_up_length(self) -> int:
        """Steps of the TopK warm-up: the field, or the architecture's share of the run;
        0 for architectures that have none (topk, standard)."""
        if self.architecture not in TOPK_WARM_UP_SHARE:
            return 0
        length = self.topk_warm_up_steps
        return self.in_steps(TOPK_WARM_UP_SHARE[self.architecture] if length is None else length)

    def schedule_lengths(self) -> tuple[int, int, int]:
        """(lr warm-up, lr decay, l1 warm-up) in steps, clipped to the run.

        Warm-ups are cut to `steps`; the decay to what the lr warm-up leaves, so the two never
        overlap. A default config with few steps is therefore always valid.
        """
        lr_warm_up = self.in_steps(self.lr_warm_up_steps)
        lr_decay = min(self.in_steps(self.lr_decay_steps), self.steps - lr_warm_up)
        return lr_warm_up, lr_decay, self.in_steps(self.l1_warm_up_steps)

    def lr_factor(self, step: int) -> float:
        """Multiplier of `lr` for 0-based step `step`, as SAELens's constant scheduler with
        warm-up and decay: (step+1)/warm_up while warming, (steps-step)/decay while decaying."""
        lr_warm_up, lr_decay, _ = self.schedule_lengths()
        if step < lr_warm_up:
            return (step + 1) / lr_warm_up
        if lr_decay and step >= self.steps - lr_decay:
            return max(0.0, (self.steps - step) / lr_decay)
        return 1.0

    def coefficient_at(self, step: int) -> float:
        """The L1 (standard) or L0 (jumprelu) coefficient of 0-based step `step`: SAELens's
        linear warm-up from 0 over l1_warm_up_steps. TopK models ignore it."""
        _, _, l1_warm_up = self.schedule_lengths()
        if step < l1_warm_up:
            return self.sparsity_coefficient * step / l1_warm_up
        return self.sparsity_coefficient
