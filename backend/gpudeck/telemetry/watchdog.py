"""Which processes to kill for running over their memory reservation: a pure decision, no
side effects (telemetry/enforce.py kills and publishes; the sampler runs both every sample).

A job that shares a device holds a reservation there: bytes per device (`reservations`, job id
-> bytes). Each sample, the processes of such a job on a device are summed (its ranks and their
children together: the job is what holds the reservation, not a process). A job over its
reservation by more than the tolerance, for `samples` consecutive samples on that device, is
to be killed there. One spike shorter than that is forgiven, and a job that drops back starts
counting again from zero. Jobs without a reservation (exclusive jobs, external processes) are
never judged: an exclusive job owns its whole device. A process whose memory the driver does
not report (None) leaves its job unjudged on that device for that sample: the watchdog never
kills on a figure it does not have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpudeck.telemetry.schema import DeviceSample

MIB = 1024**2
GIB = 1024**3
MIN_TOLERANCE_BYTES = 64 * MIB
TOLERANCE_FRACTION = 0.02
SAMPLES_OVER = 2


def format_bytes(size: int) -> str:
    """`9.3 GiB`, one decimal, as the cause reads; below a GiB in whole MiB (`600 MiB`), where
    one decimal of a GiB would hide the difference between a reservation and its use."""
    if size >= GIB:
        return f"{size / GIB:.1f} GiB"
    return f"{size / MIB:.0f} MiB"


@dataclass(frozen=True)
class ProcessUse:
    pid: int
    used_bytes: int | None  # None where the driver does not report it
    job_id: int | None  # the GPUDeck job it belongs to; None for an external process


@dataclass(frozen=True)
class DeviceUse:
    device: str  # `<node>/<index>`, as the cause names it
    processes: Sequence[ProcessUse]


def device_uses(node: str, samples: Iterable[DeviceSample]) -> list[DeviceUse]:
    """What the watchdog judges from one sample: each device's processes (a lost device lists
    none)."""
    return [
        DeviceUse(
            f"{node}/{d.index}",
            [ProcessUse(p.pid, p.used_memory_bytes, p.job_id) for p in d.processes],
        )
        for d in samples
    ]


@dataclass(frozen=True)
class KillDecision:
    job_id: int
    device: str
    pids: tuple[int, ...]  # the job's processes on that device, and only those
    used_bytes: int
    reserved_bytes: int

    @property
    def cause(self) -> str:
        return (
            f"used {format_bytes(self.used_bytes)} of its "
            f"{format_bytes(self.reserved_bytes)} reservation on {self.device}"
        )


@dataclass(frozen=True)
class _JobUse:
    pids: tuple[int, ...]
    used_bytes: int | None  # None when any of its processes went unreported


def _by_job(processes: Iterable[ProcessUse], reservations: Mapping[int, int]) -> dict[int, _JobUse]:
    pids: dict[int, list[int]] = {}
    used: dict[int, int | None] = {}
    for p in processes:
        if p.job_id is None or p.job_id not in reservations:
            continue
        pids.setdefault(p.job_id, []).append(p.pid)
        before = used.get(p.job_id, 0)
        used[p.job_id] = None if before is None or p.used_bytes is None else before + p.used_bytes
    return {job: _JobUse(tuple(pids[job]), used[job]) for job in pids}


class Watchdog:
    """Keeps, per (device, job), how many consecutive samples the job has been over."""

    def __init__(
        self,
        *,
        samples: int = SAMPLES_OVER,
        min_tolerance_bytes: int = MIN_TOLERANCE_BYTES,
        tolerance_fraction: float = TOLERANCE_FRACTION,
    ) -> None:
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self.samples = samples
        self.min_tolerance_bytes = min_tolerance_bytes
        self.tolerance_fraction = tolerance_fraction
        self._over: dict[tuple[str, int], int] = {}

    def tolerance_bytes(self, reserved_bytes: int) -> int:
        return max(self.min_tolerance_bytes, int(reserved_bytes * self.tolerance_fraction))

    def observe(
        self, devices: Iterable[DeviceUse], reservations: Mapping[int, int]
    ) -> list[KillDecision]:
        """One sample in, the kills it calls for out."""
        decisions: list[KillDecision] = []
        seen: set[tuple[str, int]] = set()
        for device in devices:
            for job_id, use in _by_job(device.processes, reservations).items():
                key = (device.device, job_id)
                seen.add(key)
                if use.used_bytes is None:
                    continue  # unjudged this sample: its streak neither grows nor resets
                decision = self._judge(key, use, reservations[job_id])
                if decision is not None:
                    decisions.append(decision)
        # A job gone from a device (ended, killed, its reservation withdrawn) starts afresh.
        for key in set(self._over) - seen:
            del self._over[key]
        return decisions

    def _judge(self, key: tuple[str, int], use: _JobUse, reserved: int) -> KillDecision | None:
        assert use.used_bytes is not None
        if use.used_bytes <= reserved + self.tolerance_bytes(reserved):
            self._over.pop(key, None)
            return None
        count = self._over.get(key, 0) + 1
        if count < self.samples:
            self._over[key] = count
            return None
        # Decided: count afresh, so a process slow to die is not killed again every sample.
        self._over.pop(key, None)
        device, job_id = key
        return KillDecision(job_id, device, use.pids, use.used_bytes, reserved)
