"""What a device provider is and what it is given to read devices. Which provider a node uses is
decided in telemetry/factory.py, so that the providers import this module and nothing imports
them back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.schema import DeviceSample, Source
from gpudeck.telemetry.stream import ManagedPid


@dataclass(frozen=True)
class Placement:
    """The job holding a device (a live allocation), as the simulated provider needs it."""

    job_id: int
    rank: int
    status: str
    memory_bytes: int | None  # the job's estimate_bytes_per_device, when set


@dataclass(frozen=True)
class SampleContext:
    # pid -> (job_id, rank, kind) of ranks GPUDeck started on this node (the worker's Redis hash).
    managed_pids: Mapping[int, ManagedPid] = field(default_factory=dict)
    # device uuid -> its holder; read from the database only for providers that need it.
    placements: Mapping[str, Placement] = field(default_factory=dict)
    # job id -> the bytes it reserved on each of its devices, for jobs that share a device; the
    # watchdog (telemetry/watchdog.py) holds these jobs, and only these, to their reservation.
    reservations: Mapping[int, int] = field(default_factory=dict)
    # device uuid -> the sharing jobs placed on it (several per device); read, like
    # `placements`, only for providers that need it (simulated devices).
    shared_placements: Mapping[str, Sequence[Placement]] = field(default_factory=dict)


class Provider(Protocol):
    source: Source
    needs_placements: bool

    def inventory(self) -> list[DeviceInfo]: ...

    def read(self, context: SampleContext) -> list[DeviceSample]: ...

    def close(self) -> None: ...
