from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.telemetry.schema import DeviceReadings, Source

__all__ = ["ExternalProcess", "GpuPublic", "Holder", "NodePublic", "Reservation", "Source"]


class Holder(BaseModel):
    job_id: int
    job_name: str
    owner: str
    releasing: bool = Field(
        default=False,
        description=(
            "the job has ended but this device's node has not yet confirmed its processes are "
            "gone (a job across nodes): no other job gets the device until it does, or until "
            "that node's lease has passed"
        ),
    )


class Reservation(BaseModel):
    """A job sharing the device by memory, and the bytes it reserved on it (docs/sharing.md)."""

    job_id: int
    job_name: str
    owner: str
    reserved_bytes: int = Field(description="its estimate + a CUDA context reserve")
    releasing: bool = Field(default=False, description="as Holder.releasing")


class ExternalProcess(BaseModel):
    pid: int
    used_memory_bytes: int | None


class GpuPublic(DeviceReadings):
    """Inventory, holder job and the latest sample of one device. The live readings are those of
    the newest sample (None before the first one); `stale` says the sampler has gone quiet."""

    node: str
    uuid: str
    index: int
    name: str
    source: Source
    memory_total_bytes: int
    held_by: Holder | None = Field(
        description="the job holding the device; on a shared device the first of its sharing "
        "jobs (every one is in `reservations`)"
    )
    reservations: list[Reservation] = Field(
        default_factory=list,
        description="the jobs sharing the device by memory, by job id (empty: not shared)",
    )
    reservation_room_bytes: int | None = Field(
        default=None,
        description="what a sharing job could still reserve on it: usable memory when idle less "
        "the reservations; null where no sharing job may join (its node does not allow sharing, "
        "a whole-device job holds it, or a process GPUDeck did not start uses it)",
    )
    node_shares_memory: bool = Field(
        default=False, description="its node allows jobs to share devices by memory"
    )
    external_processes: list[ExternalProcess] = Field(
        description="processes GPUDeck did not start: the device is externally busy"
    )
    last_seen_at: datetime
    sampled_at: datetime | None = None
    sample_age_s: float | None = Field(default=None, description="seconds since sampled_at")
    stale: bool = Field(default=True, description="no sample, or none for several intervals")


class NodePublic(BaseModel):
    # Read from a row of `services.cluster.inventory.list_nodes`.

    model_config = ConfigDict(from_attributes=True)

    name: str
    source: Source
    device_count: int
    registered_at: datetime
    last_seen_at: datetime
    address: str | None = Field(description="where the other nodes reach it")
    online: bool = Field(description="its sampler reported lately; if not, no job may use it")
    share_memory: bool = Field(
        default=False, description="an admin allows jobs to share its devices by memory"
    )
    share_across_users: bool = Field(
        default=False, description="jobs of different users may share one of its devices"
    )
    cuda_context_reserve_bytes: int = Field(
        default=0,
        description="what each sharing job reserves on a device beyond its estimate (the CUDA "
        "context): a sharing job's reservation is its estimate plus this",
    )
