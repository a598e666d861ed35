from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

Source = Literal["nvml", "simulated"]


class Holder(BaseModel):
    job_id: int
    job_name: str
    owner: str


class ExternalProcess(BaseModel):
    pid: int
    used_memory_bytes: int | None


class GpuPublic(BaseModel):
    node: str
    uuid: str
    index: int
    name: str
    source: Source
    memory_total_bytes: int
    held_by: Holder | None
    external_processes: list[ExternalProcess]
    last_seen_at: datetime


class NodePublic(BaseModel):
    name: str
    source: Source
    device_count: int
    registered_at: datetime
    last_seen_at: datetime
