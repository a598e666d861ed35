"""What a device provider is, and which one this node uses (`device_provider` setting)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gpudeck.core.config import Settings
from gpudeck.schemas.telemetry import DeviceSample, Source
from gpudeck.services.inventory import DeviceInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Placement:
    """The job holding a device (a live allocation), as the simulated provider needs it."""

    job_id: int
    rank: int
    status: str
    memory_bytes: int | None  # the job's estimate_bytes_per_device, when set


@dataclass(frozen=True)
class SampleContext:
    # pid -> (job_id, rank) of ranks GPUDeck started on this node (the worker's Redis hash).
    managed_pids: Mapping[int, tuple[int, int | None]] = field(default_factory=dict)
    # device uuid -> its holder; read from the database only for providers that need it.
    placements: Mapping[str, Placement] = field(default_factory=dict)


class Provider(Protocol):
    source: Source
    needs_placements: bool

    def inventory(self) -> list[DeviceInfo]: ...

    def read(self, context: SampleContext) -> list[DeviceSample]: ...

    def close(self) -> None: ...


def make_provider(settings: Settings) -> Provider:
    """`auto` is NVML when `nvmlInit` works here, else the simulated device set."""
    from gpudeck.telemetry import nvml
    from gpudeck.telemetry.simulated import SimulatedProvider

    choice = settings.device_provider
    if choice in ("auto", "nvml"):
        try:
            return nvml.NvmlProvider()
        except nvml.NvmlUnavailable as exc:
            if choice == "nvml":
                raise
            log.info("NVML unavailable (%s); using simulated devices", exc)
    return SimulatedProvider(settings.simulated, settings.node_name, settings.sample_interval_s)
