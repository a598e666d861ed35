"""A sweep: many jobs from one spec (docs/sweeps.md). Strict, as every request."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from gpudeck.schemas.jobs import NAME_PATTERN, JobCreate, Progress, QueueInfo

MAX_MEMBERS = 1000
MAX_PARAMETERS = 16
# A config field, nested ones by dots: "lr", "dataset.num_features".
PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,7}$")
Values = Annotated[list[JsonValue], Field(min_length=1, max_length=MAX_MEMBERS)]


class RandomParameter(BaseModel):
    """Drawn `count` times (seeded): `uniform` and `log_uniform` between low and high, `int`
    an integer from low to high (both included), `choice` one of `values`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    distribution: Literal["uniform", "log_uniform", "int", "choice"]
    low: float | None = Field(default=None, allow_inf_nan=False)
    high: float | None = Field(default=None, allow_inf_nan=False)
    values: list[JsonValue] | None = Field(default=None, min_length=1, max_length=MAX_MEMBERS)

    @model_validator(mode="after")
    def _bounds(self) -> RandomParameter:
        if self.distribution == "choice":
            if self.values is None or self.low is not None or self.high is not None:
                raise ValueError("choice takes values, and no low or high")
            return self
        if self.values is not None or self.low is None or self.high is None:
            raise ValueError(f"{self.distribution} takes low and high, and no values")
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        if self.distribution == "log_uniform" and self.low <= 0:
            raise ValueError("log_uniform needs low above 0")
        if self.distribution == "int" and (
            self.low != int(self.low) or self.high != int(self.high)
        ):
            raise ValueError("int takes whole numbers for low and high")
        return self


class SweepParameters(BaseModel):
    """What varies, by config path: every combination of the `grid` lists, with the `zip` lists
    advanced together, and, for `random`, `count` seeded draws of each combination."""

    model_config = ConfigDict(extra="forbid", strict=True)

    grid: dict[str, Values] = Field(default_factory=dict, examples=[{"k": [8, 16, 32]}])
    zip: dict[str, Values] = Field(default_factory=dict)
    random: dict[str, RandomParameter] = Field(default_factory=dict)
    count: int | None = Field(
        default=None, ge=1, le=MAX_MEMBERS, description="random draws (only with random)"
    )
    seed: int = Field(default=0, ge=0, le=2**32 - 1)

    @field_validator("grid", "zip", "random")
    @classmethod
    def _paths(cls, value: dict[str, Any]) -> dict[str, Any]:
        for path in value:
            if not PATH.match(path):
                raise ValueError(f"{path!r} is not a config path (names joined by dots)")
        return value

    @model_validator(mode="after")
    def _shape(self) -> SweepParameters:
        paths = [*self.grid, *self.zip, *self.random]
        if not paths:
            raise ValueError("name at least one parameter (grid, zip or random)")
        if len(paths) > MAX_PARAMETERS:
            raise ValueError(f"at most {MAX_PARAMETERS} parameters")
        repeated = sorted({p for p in paths if paths.count(p) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} named twice")
        lengths = {len(v) for v in self.zip.values()}
        if len(lengths) > 1:
            raise ValueError(f"zip lists must have one length, not {sorted(lengths)}")
        if (self.count is None) != (not self.random):
            raise ValueError("count goes with random, and random needs a count")
        return self


class EarlyStop(BaseModel):
    """Stop members that are hopeless, as Optuna's median pruner and ASHA (Ray Tune, Determined)
    do. `median`: a running member past `grace_steps` whose best `metric` so far is worse than
    the median of the succeeded members' best up to the same step (at least `min_peers` of
    them got that far). `asha`: at each rung (grace_steps x reduction_factor^k steps), a member goes
    on only if it is in the best 1/reduction_factor of the members that reached the rung. A
    stopped member ends `stopped_early`, keeps its last checkpoint and frees its devices."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rule: Literal["median", "asha"]
    metric: str = Field(min_length=1, max_length=64, examples=["mse_loss"])
    mode: Literal["min", "max"] = "min"
    grace_steps: int = Field(ge=1, le=10**9, description="no member is stopped before this")
    min_peers: int = Field(default=3, ge=1, le=1000, description="median: members to compare")
    reduction_factor: int = Field(default=3, ge=2, le=16, description="asha: 1/rf go on")


class SweepCreate(BaseModel):
    """A base job (any kind, its devices or count, its scheduling) and the parameters that vary
    over its config. Each member is validated as a job would be; if any is invalid, nothing is
    created and the answer names the member, its values and the field."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = Field(default=None, min_length=1, max_length=100, pattern=NAME_PATTERN)
    job: JobCreate
    parameters: SweepParameters
    max_parallel: int | None = Field(
        default=None, ge=1, le=1024, description="at most this many members run at once"
    )
    early_stop: EarlyStop | None = None


class SweepPatch(BaseModel):
    """What may change on a running sweep."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_parallel: int = Field(
        ge=1, le=1024, description="at most this many members run at once, from now on"
    )


class SweepMember(BaseModel):
    job_id: int
    index: int
    params: dict[str, JsonValue]
    name: str
    status: str
    progress: Progress
    error_summary: str | None
    metrics: dict[str, float] = Field(
        description="its newest value of every metric it reported, whatever its end"
    )
    started_at: datetime | None
    finished_at: datetime | None
    queue: QueueInfo | None = Field(
        default=None,
        description="a waiting member's place, reason and expected start (a member waiting on "
        "the sweep's max_parallel starts as a running member ends, at its measured rate)",
    )


class SweepHeader(BaseModel):
    """What every view of a sweep starts with: a row of the list and the sweep's page."""

    id: int
    name: str
    owner: str
    kind: str
    max_parallel: int | None
    created_at: datetime


class SweepPublic(SweepHeader):
    spec: dict[str, Any] = Field(description="the request as accepted")
    counts: dict[str, int] = Field(description="members by status")
    largest_estimate_bytes: int | None = Field(description="the largest member's per device")
    members: list[SweepMember]


class SweepCancelled(SweepPublic):
    """A sweep as its cancel left it, with what the cancel did."""

    cancelled: int = Field(description="members that were waiting: cancelled now")
    stopping: int = Field(
        description="members that were starting or running: asked to stop, each ends after "
        "its final checkpoint"
    )


class SweptParameter(BaseModel):
    """One parameter a sweep varies, as the sweeps list says it."""

    path: str
    how: Literal["grid", "zip", "uniform", "log_uniform", "int", "choice"]
    values: list[JsonValue] | None = Field(description="grid, zip and choice: the values tried")
    low: float | None = Field(description="a random draw's low")
    high: float | None = Field(description="a random draw's high")
    text: str = Field(
        description="as the list and the CLI say it: 'k 8, 16, 32', 'lr 0.0001 to 0.01 "
        "log-uniform'",
        examples=["lr 0.0001 to 0.01 log-uniform"],
    )


class SweepSummary(SweepHeader):
    counts: dict[str, int]
    swept: list[SweptParameter] = Field(description="what the sweep varies, in its spec's order")


class ParameterEffect(BaseModel):
    """One swept parameter against the analysed metric."""

    path: str
    numeric: bool = Field(description="every value a number: it can be an axis")
    log_axis: bool = Field(description="its values are positive and span a decade or more")
    low: float | None = Field(description="the range searched: the spec's low, else the least")
    high: float | None = Field(description="the spec's high, else the largest value tried")
    best_value: JsonValue = Field(description="the best member's value")
    edge: Literal["top", "bottom"] | None = Field(
        description="the best member's value is the largest (top) or least (bottom) tried, "
        "of at least 3: the best may lie past the range searched"
    )
    rank_correlation: float | None = Field(
        description="Spearman's rank correlation of the value with the metric, over the "
        "members measured (None: fewer than 3, or a constant); its size is the importance shown"
    )
    note: str | None = Field(description="the edge callout, as the page and the CLI say it")


class SweepAnalysis(BaseModel):
    """A metric against every swept parameter: the best member, each parameter's rank
    correlation with the metric (a monotone trend, not an interaction-aware importance such
    as fANOVA's) and whether the best lies at the edge of the range searched."""

    metric: str
    better: Literal["min", "max"]
    measured: int = Field(description="members with the metric that the analysis uses")
    running: int = Field(description="of those, still running (their newest figure)")
    best_job_id: int | None
    best_index: int | None
    best_value: float | None
    importance: str = Field(description="what rank_correlation measures, in words")
    parameters: list[ParameterEffect]


class SweepDraws(BaseModel):
    """The members' values a sweep's parameters give, before anything is created: the random
    draws are those the sweep would make (seeded), so the form shows them before launch."""

    count: int
    members: list[dict[str, JsonValue]]
