"""The telemetry schema: one set of models for the sampler's Redis stream, the WebSocket feed,
`GET /api/gpus`, the generated TypeScript client and `/metrics`.

Every reading NVML could not take is `None` (never a made-up zero); every sample says whether it
came from real GPUs (`nvml`) or from the simulated provider (`simulated`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

Source = Literal["nvml", "simulated"]


class GpuProcess(BaseModel):
    """A process holding memory on a device, as NVML (or the simulated provider) lists it."""

    pid: int
    used_memory_bytes: int | None = Field(description="None where the driver does not report it")
    managed: bool = Field(description="started by GPUDeck (a rank of a job, or its child)")
    job_id: int | None = Field(default=None, description="the job whose rank this is, if managed")
    kind: str | None = Field(default=None, description="that job's kind, if managed")
    rank: int | None = Field(default=None, description="its rank in that job, if it is one")
    user: str | None = Field(default=None, description="the process's user; None when unknown")
    command: str | None = Field(
        default=None, description="its whole command line (cut only past 2,000 characters)"
    )
    program: str | None = Field(
        default=None,
        description="its program's file name (no directory) and arguments: what a list shows",
    )
    host_peak_rss_bytes: int | None = Field(
        default=None,
        description="its peak resident host memory (VmHWM): what a rank on a simulated device "
        "really used; None when the process is not visible here",
    )


class DeviceReadings(BaseModel):
    """The live readings of one device at one sample; shared by samples and `GpuPublic`."""

    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = Field(default=None, description="NVML's free memory")
    utilization_gpu_pct: int | None = Field(default=None, ge=0, le=100)
    utilization_memory_pct: int | None = Field(default=None, ge=0, le=100)
    temperature_c: int | None = None
    power_watts: float | None = None
    power_limit_watts: float | None = None
    sm_clock_mhz: int | None = None
    processes: list[GpuProcess] = Field(
        default_factory=list, description="refreshed less often than the other readings"
    )
    lost: bool = Field(default=False, description="NVML reports the GPU as lost (GpuIsLost)")


class DeviceSample(DeviceReadings):
    uuid: str
    index: int
    name: str
    memory_total_bytes: int


class NodeSample(BaseModel):
    """One consistent snapshot of every device of one node, taken by that node's sampler."""

    node: str
    source: Source
    sampled_at: datetime
    interval_s: float = Field(
        description="the sampler's interval; a sample older than a few is stale"
    )
    devices: list[DeviceSample]


class TelemetryMessage(BaseModel):
    """A WebSocket message: `snapshot` (recent history, oldest first) on connect, then one
    `sample` message per node sample. `unavailable` (with a `message` to show) when the
    telemetry store cannot be read, `available` when it can again; samples then resume on
    the same connection."""

    type: Literal["snapshot", "sample", "unavailable", "available"]
    samples: list[NodeSample]
    message: str | None = None


class TelemetryHistory(BaseModel):
    seconds: int
    samples: list[NodeSample] = Field(description="oldest first, all nodes interleaved by time")


class SamplerHealth(BaseModel):
    node: str
    source: Source | None
    last_sample_at: datetime | None
    last_sample_age_s: float | None
    samples_total: int
    errors_total: int
    last_error: str | None
    last_duration_s: float | None
