"""Which GPU processes did GPUDeck start? Those whose PID, or an ancestor's, the worker
registered (see telemetry/stream.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from gpudeck.telemetry.schema import GpuProcess
from gpudeck.telemetry.stream import ManagedPid

_MAX_ANCESTORS = 8
# The whole command line is shown on hover; this only bounds a runaway one (a sample carries
# every process of every device).
MAX_COMMAND_CHARS = 2000
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
    managed: Mapping[int, ManagedPid],
    parent_of: Callable[[int], int | None] = parent_pid,
) -> ManagedPid | None:
    """The job entry of this process or of its nearest registered ancestor (DataLoader
    workers...); None for a process GPUDeck did not start."""
    current: int | None = pid
    for _ in range(_MAX_ANCESTORS):
        if current is None or current <= 1:
            return None
        if current in managed:
            return managed[current]
        current = parent_of(current)
    return None


@dataclass(frozen=True)
class Described:
    """What /proc says of a process; None for what cannot be read (gone, another namespace,
    not allowed)."""

    user: str | None = None
    command: str | None = None  # the whole command line, for the hover
    program: str | None = None  # the program's name (no directory) and its arguments


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_COMMAND_CHARS else text[: MAX_COMMAND_CHARS - 1] + "…"


def program_line(argv: list[str], name: str) -> str:
    """The program's file name and its arguments: `python train.py --lr 3e-4`, not the
    interpreter's whole path, which filled the column before the script was reached."""
    if not argv:
        return name
    return " ".join([os.path.basename(argv[0]) or argv[0], *argv[1:]])


def describe(pid: int) -> Described:
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            user = process.username()
            argv, name = process.cmdline(), process.name()
    except (psutil.Error, OSError):
        return Described()
    command = " ".join(argv) or name
    return Described(user, _shorten(command), _shorten(program_line(argv, name)))


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


def process_view(
    pid: int, used: int | None, owner: ManagedPid | None, *, is_rank: bool = True
) -> GpuProcess:
    """`owner` is the process's own entry (`is_rank`) or its nearest registered ancestor's
    (a child of a rank: same job and kind, no rank of its own)."""
    described = describe(pid)
    return GpuProcess(
        pid=pid,
        used_memory_bytes=used,
        managed=owner is not None,
        job_id=owner.job_id if owner else None,
        kind=owner.kind if owner else None,
        rank=owner.rank if owner and is_rank else None,
        user=described.user,
        command=described.command,
        program=described.program,
        host_peak_rss_bytes=peak_rss_bytes(pid),
    )


def classify(
    raw: list[RawProcess],
    managed: Mapping[int, ManagedPid],
    parent_of: Callable[[int], int | None] = parent_pid,
) -> list[GpuProcess]:
    return [
        process_view(pid, used, owner_of(pid, managed, parent_of), is_rank=pid in managed)
        for pid, used in raw
    ]
