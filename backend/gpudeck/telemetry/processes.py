"""Which GPU processes did GPUDeck start? Those whose PID, or an ancestor's, the worker
registered (see telemetry/stream.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import psutil

from gpudeck.telemetry.schema import GpuProcess

_MAX_ANCESTORS = 8
MAX_COMMAND_CHARS = 200
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


def describe(pid: int) -> tuple[str | None, str | None]:
    """(user, command line) of a process; None for what cannot be read (gone, another
    namespace, not allowed)."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            user = process.username()
            command = " ".join(process.cmdline()) or process.name()
    except (psutil.Error, OSError):
        return None, None
    if len(command) > MAX_COMMAND_CHARS:
        command = command[: MAX_COMMAND_CHARS - 1] + "…"
    return user, command


def peak_rss_bytes(pid: int) -> int | None:
    """The process's peak resident memory so far (VmHWM in /proc/<pid>/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # reported in kB
    return None


def process_view(pid: int, used: int | None, job_id: int | None, rank: int | None) -> GpuProcess:
    user, command = describe(pid)
    return GpuProcess(
        pid=pid,
        used_memory_bytes=used,
        managed=job_id is not None,
        job_id=job_id,
        rank=rank,
        user=user,
        command=command,
        host_peak_rss_bytes=peak_rss_bytes(pid),
    )


def classify(
    raw: list[RawProcess],
    managed: Mapping[int, tuple[int, int | None]],
    parent_of: Callable[[int], int | None] = parent_pid,
) -> list[GpuProcess]:
    out = []
    for pid, used in raw:
        job_id = owner_of(pid, managed, parent_of)
        rank = managed[pid][1] if pid in managed else None
        out.append(process_view(pid, used, job_id, rank))
    return out
