"""Which GPU processes did GPUDeck start? Those whose PID, or an ancestor's, the worker
registered (see telemetry/stream.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from gpudeck.schemas.telemetry import GpuProcess

_MAX_ANCESTORS = 8
RawProcess = tuple[int, int | None]  # (pid, used memory bytes or None)


def parent_pid(pid: int) -> int | None:
    """From /proc/<pid>/stat; None when the process is gone or not visible (another namespace)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def owner_of(
    pid: int,
    managed: Mapping[int, tuple[int, int | None]],
    parent_of: Callable[[int], int | None] = parent_pid,
) -> int | None:
    """The job id whose rank is this process or one of its ancestors (DataLoader workers...)."""
    current: int | None = pid
    for _ in range(_MAX_ANCESTORS):
        if current is None or current <= 1:
            return None
        if current in managed:
            return managed[current][0]
        current = parent_of(current)
    return None


def classify(
    raw: list[RawProcess],
    managed: Mapping[int, tuple[int, int | None]],
    parent_of: Callable[[int], int | None] = parent_pid,
) -> list[GpuProcess]:
    out = []
    for pid, used in raw:
        job_id = owner_of(pid, managed, parent_of)
        out.append(
            GpuProcess(pid=pid, used_memory_bytes=used, managed=job_id is not None, job_id=job_id)
        )
    return out
