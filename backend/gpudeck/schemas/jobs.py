from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    computed_field,
    field_validator,
    model_validator,
)

from gpudeck.models import JobStatus
from gpudeck.schemas.advice import advise, host_advice, time_advice
from gpudeck.schemas.clusters import ClusterName, SlurmName
from gpudeck.schemas.failure import failed_rank, failure_cause

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:-]*$"
# A tag is one word to find a job by: `gpudeck tag 12 baseline`, `?tag=baseline`.
TAG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:+=/-]*$"
Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=TAG_PATTERN)]
MAX_NOTES_CHARS = 10_000
UUID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"


class DeviceRef(BaseModel):
    """A device by uuid, or by its NVML index on a node. `node` may be left out on one node."""

    model_config = ConfigDict(extra="forbid", strict=True)

    node: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    uuid: str | None = Field(default=None, min_length=1, max_length=96, pattern=UUID_PATTERN)
    index: int | None = Field(default=None, ge=0, le=63)

    @model_validator(mode="after")
    def _uuid_or_index(self) -> DeviceRef:
        if (self.uuid is None) == (self.index is None):
            raise ValueError("give exactly one of uuid or index")
        return self


class JobCreate(BaseModel):
    """A job: a registered kind, that kind's config, and its devices (a list, or a count)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: str = Field(min_length=1, max_length=64, examples=["sae"])
    config: dict[str, Any] = Field(
        default_factory=dict, description="the kind's config; see GET /api/kinds"
    )
    devices: list[DeviceRef] | None = Field(default=None, min_length=1, max_length=64)
    count: int | None = Field(default=None, ge=1, le=64, description="let GPUDeck pick devices")
    node: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=NAME_PATTERN, description="for count"
    )
    nodes: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description=(
            "for count: spread it evenly over at most this many nodes (it must divide count); "
            "the scheduler takes the fewest that have room"
        ),
    )
    devices_per_node: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="for count: exactly this many devices on each node (it must divide count)",
    )
    cluster: ClusterName | None = Field(
        default=None,
        description="run on this Slurm cluster (GET /api/clusters) instead of GPUDeck's own "
        "nodes; Slurm places it: give a count (and nodes or devices_per_node across nodes)",
    )
    partition: SlurmName | None = Field(
        default=None, description="for cluster: one of its partitions (default: its first)"
    )
    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=NAME_PATTERN)
    force: bool = Field(default=False, description="skip the free-memory check")
    share: Literal["exclusive", "memory"] = Field(
        default="exclusive",
        description="exclusive: whole devices; memory: share each device with other sharing "
        "jobs, holding its estimate plus a CUDA context reserve there (the node must allow "
        "it; the job is killed if it uses more)",
    )
    queue: bool = Field(
        default=True, description="wait when the devices are busy; false: answer 409 at once"
    )
    priority: int = Field(
        default=0, ge=-100, le=100, description="higher first; above 0 is for admins"
    )
    time_limit_s: int | None = Field(
        default=None, ge=1, le=365 * 86400, description="None: the configured default"
    )
    depends_on: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] = Field(
        default_factory=list, max_length=64, description="start after these jobs succeed"
    )
    preemptible: bool = Field(
        default=False, description="may be stopped (final checkpoint) for higher priority"
    )
    hold: bool = Field(default=False, description="submit held: waits until released")

    @field_validator("nodes", "devices_per_node")
    @classmethod
    def _spread_count(cls, value: int | None, info: ValidationInfo) -> int | None:
        """A count spread over nodes splits evenly (fields before this one are in `data`)."""
        if value is None:
            return value
        count = info.data.get("count")
        if not isinstance(count, int):
            raise ValueError("goes with a valid count (a count spread over nodes), not devices")
        if count % value:
            unit = "nodes" if info.field_name == "nodes" else "devices per node"
            raise ValueError(f"count {count} does not split evenly into {value} {unit}")
        nodes = info.data.get("nodes")
        if info.field_name == "devices_per_node" and nodes is not None and nodes * value != count:
            raise ValueError(f"count {count} is not {nodes} nodes x {value} devices")
        return value

    @model_validator(mode="after")
    def _devices_or_count(self) -> JobCreate:
        if (self.devices is None) == (self.count is None):
            raise ValueError("give exactly one of devices or count")
        if self.cluster is not None and (self.devices is not None or self.node is not None):
            raise ValueError("a job on a cluster takes a count: Slurm chooses its nodes")
        if self.partition is not None and self.cluster is None:
            raise ValueError("partition goes with cluster")
        if self.share == "memory" and self.cluster is not None:
            raise ValueError("share: a job on a cluster cannot share devices (Slurm places it)")
        return self

    @property
    def world_size(self) -> int:
        return len(self.devices) if self.devices is not None else int(self.count or 0)

    @property
    def node_counts(self) -> tuple[int, ...] | None:
        return node_counts(int(self.count or 0), self.nodes, self.devices_per_node)


def node_counts(
    count: int, nodes: int | None, devices_per_node: int | None
) -> tuple[int, ...] | None:
    """A count spread over nodes: the node counts it may run on, fewest first (each splits it
    evenly: `devices_per_node` fixes one, `nodes` allows every one up to it); None for named
    devices or a count on one node."""
    if devices_per_node:
        return (count // devices_per_node,)
    if nodes:
        return tuple(m for m in range(1, nodes + 1) if count % m == 0)
    return None


class AllocatedDevice(BaseModel):
    # Read from a `models.Allocation` (its gpu_uuid, gpu_index) or from these names. Comments,
    # not docstrings, here: a docstring would become the OpenAPI description.

    model_config = ConfigDict(from_attributes=True)

    node: str
    uuid: str = Field(validation_alias=AliasChoices("uuid", "gpu_uuid"))
    index: int = Field(validation_alias=AliasChoices("index", "gpu_index"))
    rank: int


class Progress(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    step: int
    total: int | None
    rate_per_s: float | None = Field(
        default=None, description="steps a second over the current run, once measured"
    )


ReasonCode = Literal[
    "devices_busy",
    "priority",
    "quota",
    "dependency",
    "held",
    "insufficient_memory",
    "preempting",
    "sweep",
    "cluster",
]


class QueueInfo(BaseModel):
    # Where a waiting job stands, as the scheduler's pass sees it now.

    position: int | None = Field(
        description="1 = next to start; null on a Slurm cluster, which orders its own queue"
    )
    reason_code: ReasonCode
    reason: str = Field(examples=["devices busy: vm/1 held by job 12"])
    expected_start_at: datetime | None = Field(
        description=(
            "from the measured rates of the running jobs ahead (steps left / steps a second), "
            "the time limits of those without one, and how long the waiting ones' owners' "
            "jobs usually run; null when unknown"
        )
    )
    expected_start_from_time_limits: bool = Field(
        default=False,
        description=(
            "some job ahead is counted for its whole time limit (no measured rate yet): the "
            "job will likely start sooner than expected_start_at"
        ),
    )


class RankPeak(BaseModel):
    rank: int
    host_peak_rss_bytes: int = Field(description="the rank's peak resident host memory")


class RankMemory(BaseModel):
    # What a job's ranks really used: on the host (script jobs; written when the job ends) and
    # on GPUs (NVML per process, raised by the sampler while the job runs).

    host_limit_bytes: int | None = Field(
        default=None, description="the job's host memory limit on its node"
    )
    exceeded: bool = Field(default=False, description="the job was stopped for passing it")
    ranks: list[RankPeak] = Field(default_factory=list)
    device_peak_bytes: dict[str, int] = Field(
        default_factory=dict, description="rank -> its peak device memory (NVML, GPUs only)"
    )


class SlurmView(BaseModel):
    """A job on a Slurm cluster as the executor's last poll read it."""

    partition: str | None = None
    nodes_requested: int | None = None
    gpu_type: str | None = Field(
        default=None,
        description="the GRES type asked for (the smallest its estimate fits, where some "
        "types of the partition do not); null: any",
    )
    state: str | None = Field(default=None, description="Slurm's own word (PENDING, RUNNING, ...)")
    reason_code: str | None = None
    reason: str | None = Field(
        default=None, description="why it waits, or why its state is unknown (Slurm silent)"
    )
    nodes: str | None = Field(default=None, description="Slurm's node list, e.g. n[1-2]")
    unknown: bool = Field(default=False, description="Slurm did not answer the last poll")
    polled_at: datetime | None = None
    attempts: int = Field(default=0, description="starts on Slurm (a requeue starts it again)")


class JobPublic(BaseModel):
    # A `models.Job` as the API shows it: `JobPublic.model_validate(job)`.

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    kind: str
    status: JobStatus
    config: dict[str, Any]
    owner: str
    node: str
    world_size: int
    nodes: int | None = Field(
        default=None,
        validation_alias=AliasChoices("nodes", "spread_nodes"),
        description="a count spread over at most this many nodes (as submitted)",
    )
    devices_per_node: int | None = Field(
        default=None, description="a count spread over nodes, this many on each (as submitted)"
    )
    devices: list[AllocatedDevice] = Field(validation_alias=AliasChoices("devices", "allocations"))
    progress: Progress
    error: str | None
    resume_from_job_id: int | None
    sweep_id: int | None = Field(default=None, description="the sweep it is a member of")
    sweep_params: dict[str, Any] | None = Field(
        default=None, description="a sweep member's parameter values, by config path"
    )
    estimate_bytes_per_device: int | None
    share: Literal["exclusive", "memory"] = Field(
        default="exclusive", description="whole devices, or a share of each by memory"
    )
    reserved_bytes_per_device: int | None = Field(
        default=None,
        description="a sharing job's reservation on each device (its estimate + a CUDA "
        "context reserve); null: whole devices",
    )
    peak_memory_bytes: int | None
    rank_memory: RankMemory | None = None
    cancel_requested: bool
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    priority: int
    time_limit_s: int
    depends_on: list[int]
    preemptible: bool
    held: bool
    tags: list[str] = Field(default_factory=list, description="its owner's tags, in order")
    notes: str = Field(default="", description="its owner's notes: why it ran, what it showed")
    cluster: str | None = Field(
        default=None,
        validation_alias=AliasChoices("cluster_name", "cluster"),
        description="the Slurm cluster it runs on; null: GPUDeck's own nodes",
    )
    slurm_job_id: str | None = Field(
        default=None, description='Slurm\'s id for it once submitted ("123", "123_4")'
    )
    slurm: SlurmView | None = Field(
        default=None, description="Slurm's last word on it, as the executor's poll read it"
    )
    latest_metrics: dict[str, float] = Field(
        default_factory=dict,
        description="the newest value of every metric it reported (its kind's summary_metrics "
        "name the ones to show first)",
    )
    queue: QueueInfo | None = Field(
        default=None,
        description=(
            "why and where it waits, while it waits for devices: from a pass on reads "
            "(GET /api/jobs, /api/jobs/{id}, /api/queue), from the scheduler's last pass in "
            "the submit answer"
        ),
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="why the job ended, in one line (the last exception line of a traceback)"
    )
    @property
    def error_summary(self) -> str | None:
        return failure_cause(self.error)

    @computed_field(  # type: ignore[prop-decorator]
        description="the rank whose failure ended the job (its log is the one to read), or null"
    )
    @property
    def failed_rank(self) -> int | None:
        return failed_rank(self.error)

    @computed_field(  # type: ignore[prop-decorator]
        description="after the run: better declarations for the next submission, from what "
        "it measured (memory_per_device_bytes and host_memory_bytes where the kind declares "
        "them; time_limit_s after a success)",
        examples=[["peak 3.1 GiB of 8 GiB declared per rank: 4 GiB would do"]],
    )
    @property
    def advice(self) -> list[str]:
        if self.status in (JobStatus.queued, JobStatus.starting, JobStatus.running):
            return []
        lines = []
        declared = self.config.get("memory_per_device_bytes")
        if isinstance(declared, int) and self.peak_memory_bytes:
            lines.append(
                advise(self.peak_memory_bytes, declared, "per rank", "memory_per_device_bytes")
            )
        if self.rank_memory is not None:
            peaks = [r.host_peak_rss_bytes for r in self.rank_memory.ranks]
            memory = self.rank_memory
            lines.append(host_advice(peaks, memory.host_limit_bytes, memory.exceeded))
        if self.status == JobStatus.succeeded and self.started_at and self.finished_at:
            ran_s = (self.finished_at - self.started_at).total_seconds()
            lines.append(time_advice(ran_s, self.time_limit_s))
        return [line for line in lines if line]


class QueuePublic(BaseModel):
    items: list[JobPublic]
    total: int


class JobPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    priority: int = Field(ge=-100, le=100, description="owners may lower it; admins set any")


class JobLabels(BaseModel):
    """A job's tags and notes, as its owner (or an admin) changes them: `tags` replaces them,
    `add_tags` and `remove_tags` change them in place; a field left out is left as it is."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tags: list[Tag] | None = Field(default=None, max_length=32, examples=[["baseline"]])
    add_tags: list[Tag] = Field(default_factory=list, max_length=32)
    remove_tags: list[Tag] = Field(default_factory=list, max_length=32)
    notes: str | None = Field(default=None, max_length=MAX_NOTES_CHARS)


class JobsPublic(BaseModel):
    items: list[JobPublic]
    total: int
    limit: int
    offset: int


class SeriesPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    metric: str = Field(description="a key of the job's reported metrics")
    label: str
    needs: str = Field(
        default="",
        description="a config field that turns this figure on; off in a job's config: not measured",
    )
    window_metric: str = Field(
        default="",
        description="a metric holding the steps this figure is counted over (shown beside it)",
    )


class ChartPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    title: str
    series: list[SeriesPublic]
    log_y: bool
    style: Literal["line", "bars"] = Field(
        default="line",
        description="line: each series against the step; bars: each series' latest value",
    )
    x_label: str = Field(default="", description="the x axis's title where it is not the step")


class JobKindPublic(BaseModel):
    """Everything the dashboard and CLIs need to offer a kind: its form (JSON Schema and
    defaults), whether it can estimate memory, and how to chart its metrics."""

    name: str
    description: str
    config_schema: dict[str, Any]
    defaults: dict[str, Any]
    batch_size_field: str | None
    steps_field: str | None
    estimates_memory: bool
    searches_batch_size: bool
    # Runs the submitter's own code (`script`): needs the run_code permission.
    runs_user_code: bool = False
    # "output": a map job (it resumes from the chunks it wrote; its ranks report chunks).
    resumes_from: Literal["checkpoint", "output"] = "checkpoint"
    # A job can follow on its output (GET /api/jobs/{id}/follow-up): "train an SAE on this".
    offers_follow_up: bool = False
    charts: list[ChartPublic]
    summary_metrics: list[SeriesPublic]
    reads_job_field: str | None = Field(
        default=None,
        description="the config field naming a job whose checkpoints or output it reads",
    )
    api_version: int = Field(description="the kind API version the kind is written for")
    available: bool = Field(
        description="false: the server refused the kind (its kind API version); not submittable"
    )
    unavailable_reason: str | None = Field(
        description="why the kind is unavailable: its version and what changed"
    )


StatusFilter = Literal[
    "queued",
    "starting",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "lost",
    "timeout",
    "stopped_early",
]
