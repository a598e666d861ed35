"""Simulated devices for machines without NVIDIA GPUs: a configured set, clearly labelled.

Readings follow the jobs placed on each device (the live allocations): a running job holds its
`estimate_bytes_per_device` (or `DEFAULT_JOB_FRACTION` of the device when it has none); a
starting job holds a quarter of that; a free device idles. Utilization, temperature, power and
clock follow the work the rank's process (and its children) actually does: its CPU time over
the wall time since the last read, one core's worth counting as a busy device. A script that
sleeps reads 0 % at idle power; one that computes reads busy. No number is made up beyond that
mapping, so the board cannot show a sleeping job as a device at work.

A device shared by several jobs (`SampleContext.shared_placements`) lists each sharing job's
processes with the memory they really hold: the job's registered rank on that device (a script
job's torchrun ranks are registered too) and every descendant of it (DataLoader workers), each
with its proportional set size (PSS, from /proc/<pid>/smaps_rollup; RSS where PSS cannot be
read). PSS rather than RSS because the watchdog sums a job's processes, and pages a forked child
shares with its parent would count once per process in RSS; for a lone process the two agree.
The device's used memory is then the sum of these, so a test (or a script) that allocates real
host memory is seen, and judged, exactly as NVML's per-process `usedGpuMemory` is on a GPU: to
grow past a reservation, allocate past it.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

import psutil

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.processes import process_view
from gpudeck.telemetry.provider import Placement, SampleContext
from gpudeck.telemetry.schema import DeviceSample, GpuProcess, Source
from gpudeck.telemetry.stream import ManagedPid

SOURCE = "simulated"
DEFAULT_JOB_FRACTION = 0.25
POWER_LIMIT_WATTS = 700.0
IDLE_POWER_WATTS = 68.0
IDLE_CLOCK_MHZ = 345
MAX_CLOCK_MHZ = 1980
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


CpuSeconds = Callable[[int], float | None]


def process_cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of a process and its live children (DataLoader workers,
    torchrun's ranks); None when the process cannot be read (gone, another namespace)."""
    try:
        process = psutil.Process(pid)
        family = [process, *process.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for member in family:
        try:
            times = member.cpu_times()
        except psutil.Error:
            continue  # a child that ended between the listing and the read
        total += times.user + times.system
    return total


MemoryBytes = Callable[[int], int | None]


def process_memory_bytes(pid: int) -> int | None:
    """The memory a process really holds: its PSS, or its RSS where PSS cannot be read; None
    when the process is gone or not visible."""
    try:
        process = psutil.Process(pid)
        try:
            return int(process.memory_full_info().pss)
        except (psutil.AccessDenied, AttributeError):
            return int(process.memory_info().rss)
    except psutil.Error:
        return None


def job_family(pid: int) -> list[int]:
    """A process and its live descendants; empty when it is gone."""
    try:
        process = psutil.Process(pid)
        return [pid, *(child.pid for child in process.children(recursive=True))]
    except psutil.Error:
        return []


RankPids = Mapping[tuple[int, int | None], tuple[int, ManagedPid]]


def sharing_processes(
    placements: Sequence[Placement],
    registered: RankPids,
    memory_bytes: MemoryBytes = process_memory_bytes,
) -> list[GpuProcess]:
    """The processes of the jobs sharing one device: each job's registered process for the
    placed rank and its descendants, with their memory. Not the job's guard (a process that is
    no rank): its family holds the job's ranks on every device. A rank not registered yet is
    not listed, as NVML lists no process before it creates its context; one that ended
    between the listing and the read is left out."""
    processes: list[GpuProcess] = []
    for placement in placements:
        if placement.status not in ("starting", "running"):
            continue
        found = registered.get((placement.job_id, placement.rank))
        if found is None:
            continue
        root, entry = found
        for pid in job_family(root):
            used = memory_bytes(pid)
            if used is not None:
                processes.append(
                    process_view(pid, used, entry, is_rank=pid == root and entry.rank is not None)
                )
    return processes


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
        cpu_seconds: CpuSeconds = process_cpu_seconds,
        memory_bytes: MemoryBytes = process_memory_bytes,
    ) -> None:
        self._devices = simulated_inventory(spec, node)
        self._interval_s = interval_s
        self._clock = clock
        self._cpu_seconds = cpu_seconds
        self._memory_bytes = memory_bytes
        # pid -> (CPU seconds, wall time) at the last read, and the share busy then
        self._last: dict[int, tuple[float, float]] = {}
        self._busy: dict[int, float] = {}

    def inventory(self) -> list[DeviceInfo]:
        return list(self._devices)

    def read(self, context: SampleContext) -> list[DeviceSample]:
        now = self._clock()
        tick = int(now / self._interval_s)
        rank_pids = {
            (entry.job_id, entry.rank): (pid, entry)
            for pid, entry in context.managed_pids.items()
            if entry.rank is not None
        }
        busy = self._measure([pid for pid, _ in rank_pids.values()], now)
        registered: RankPids = {
            (entry.job_id, entry.rank): (pid, entry) for pid, entry in context.managed_pids.items()
        }
        return [
            self._read_device(
                d,
                context.placements.get(d.uuid),
                tick,
                rank_pids,
                busy,
                sharing_processes(
                    context.shared_placements.get(d.uuid, ()), registered, self._memory_bytes
                ),
            )
            for d in self._devices
        ]

    def _measure(self, pids: list[int], now: float) -> dict[int, float]:
        """Each rank's share of one core since the last read, in [0, 1]; a process first seen
        now counts as idle until the next read, and one that cannot be read is left out."""
        for pid in pids:
            cpu = self._cpu_seconds(pid)
            if cpu is None:
                self._last.pop(pid, None)
                self._busy.pop(pid, None)
                continue
            before = self._last.get(pid)
            if before is None:
                self._busy[pid] = 0.0
                self._last[pid] = (cpu, now)
            elif now > before[1]:  # the same instant twice keeps the last figure
                self._busy[pid] = min(1.0, max(0.0, (cpu - before[0]) / (now - before[1])))
                self._last[pid] = (cpu, now)
        for gone in set(self._last) - set(pids):
            self._last.pop(gone)
            self._busy.pop(gone, None)
        return dict(self._busy)

    def close(self) -> None:
        pass

    def _read_device(
        self,
        d: DeviceInfo,
        placement: Placement | None,
        tick: int,
        rank_pids: dict[tuple[int, int], tuple[int, ManagedPid]],
        busy_by_pid: dict[int, float],
        sharing: list[GpuProcess],
    ) -> DeviceSample:
        active = placement is not None and placement.status in ("starting", "running")
        used = job_memory_bytes(placement, d.memory_total_bytes) if active and placement else 0
        processes = []
        busy = 0.0
        if active and placement is not None:
            found = rank_pids.get((placement.job_id, placement.rank))
            if found is not None:
                processes.append(process_view(found[0], used, found[1]))
                busy = busy_by_pid.get(found[0], 0.0)
        processes += sharing
        used = min(d.memory_total_bytes, used + sum(p.used_memory_bytes or 0 for p in sharing))
        busy = min(1.0, busy + sum(busy_by_pid.get(p.pid, 0.0) for p in sharing))
        n = noise(d.uuid, tick)  # a degree of wobble in the temperature, nothing else
        return DeviceSample(
            uuid=d.uuid,
            index=d.index,
            name=d.name,
            memory_total_bytes=d.memory_total_bytes,
            memory_used_bytes=used,
            memory_free_bytes=d.memory_total_bytes - used,
            utilization_gpu_pct=round(100 * busy),
            utilization_memory_pct=round(40 * busy),
            temperature_c=round(31 + 40 * busy + 2 * n),
            power_watts=round(
                IDLE_POWER_WATTS + (0.95 * POWER_LIMIT_WATTS - IDLE_POWER_WATTS) * busy, 1
            ),
            power_limit_watts=POWER_LIMIT_WATTS,
            sm_clock_mhz=round(IDLE_CLOCK_MHZ + (MAX_CLOCK_MHZ - IDLE_CLOCK_MHZ) * busy),
            processes=processes,
        )
