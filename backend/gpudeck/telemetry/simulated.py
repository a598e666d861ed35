"""Simulated devices for machines without NVIDIA GPUs: a configured set, clearly labelled.

Readings follow the jobs placed on each device (the live allocations): a running job holds its
`estimate_bytes_per_device` (or `DEFAULT_JOB_FRACTION` of the device when it has none) and keeps
the device busy; a starting job holds a quarter of that; a free device idles. Utilization,
temperature, power and clock wobble with deterministic noise (a hash of device and tick), so two
runs of a test see the same numbers.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.processes import process_view
from gpudeck.telemetry.provider import Placement, SampleContext
from gpudeck.telemetry.schema import DeviceSample, Source
from gpudeck.telemetry.stream import ManagedPid

SOURCE = "simulated"
DEFAULT_JOB_FRACTION = 0.25
POWER_LIMIT_WATTS = 700.0
_NAMESPACE = uuid.UUID("6f1c2a8e-3a43-4e0e-9d59-2b7c6c1f0a11")


def simulated_uuid(node: str, index: int) -> str:
    """Stable across restarts, distinct across nodes, and never mistaken for a real GPU's."""
    return f"SIM-{uuid.uuid5(_NAMESPACE, f'{node}/{index}')}"


def simulated_inventory(spec: SimulatedDeviceSpec, node: str) -> list[DeviceInfo]:
    return [
        DeviceInfo(
            uuid=simulated_uuid(node, i),
            index=i,
            name=spec.name,
            memory_total_bytes=spec.memory_total_bytes,
        )
        for i in range(spec.count)
    ]


def noise(*key: object) -> float:
    """A deterministic number in [0, 1) for a key."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def job_memory_bytes(placement: Placement, total: int) -> int:
    """What a job holds on a device: its estimate, or the default share, never beyond total."""
    full = placement.memory_bytes or int(total * DEFAULT_JOB_FRACTION)
    if placement.status == "starting":
        full //= 4
    return max(0, min(total, full))


class SimulatedProvider:
    source: Source = "simulated"
    needs_placements = True

    def __init__(
        self,
        spec: SimulatedDeviceSpec,
        node: str,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._devices = simulated_inventory(spec, node)
        self._interval_s = interval_s
        self._clock = clock

    def inventory(self) -> list[DeviceInfo]:
        return list(self._devices)

    def read(self, context: SampleContext) -> list[DeviceSample]:
        tick = int(self._clock() / self._interval_s)
        rank_pids = {
            (entry.job_id, entry.rank): (pid, entry)
            for pid, entry in context.managed_pids.items()
            if entry.rank is not None
        }
        return [
            self._read_device(d, context.placements.get(d.uuid), tick, rank_pids)
            for d in self._devices
        ]

    def close(self) -> None:
        pass

    def _read_device(
        self,
        d: DeviceInfo,
        placement: Placement | None,
        tick: int,
        rank_pids: dict[tuple[int, int], tuple[int, ManagedPid]],
    ) -> DeviceSample:
        active = placement is not None and placement.status in ("starting", "running")
        busy = placement is not None and placement.status == "running"
        used = job_memory_bytes(placement, d.memory_total_bytes) if active and placement else 0
        n = noise(d.uuid, tick)
        processes = []
        if active and placement is not None:
            found = rank_pids.get((placement.job_id, placement.rank))
            if found is not None:
                processes.append(process_view(found[0], used, found[1]))
        return DeviceSample(
            uuid=d.uuid,
            index=d.index,
            name=d.name,
            memory_total_bytes=d.memory_total_bytes,
            memory_used_bytes=used,
            memory_free_bytes=d.memory_total_bytes - used,
            utilization_gpu_pct=round(72 + 26 * n) if busy else (3 if active else 0),
            utilization_memory_pct=round(30 + 25 * n) if busy else 0,
            temperature_c=round(62 + 12 * n) if busy else round(31 + 3 * n),
            power_watts=round(POWER_LIMIT_WATTS * (0.6 + 0.35 * n), 1) if busy else 68.0,
            power_limit_watts=POWER_LIMIT_WATTS,
            sm_clock_mhz=round(1755 + 225 * n) if busy else 345,
            processes=processes,
        )
