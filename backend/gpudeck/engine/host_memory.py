"""A command job's host memory: bounded, measured per rank, and its rank PIDs made known.

Run inside the guard (engine/guard.py), standard library only. Two mechanisms, because
cgroup v2's `memory.max` (one limit on the whole process tree, enforced by the kernel) is not
available everywhere: hosts with cgroup v1, containers without a writable cgroup, and
unprivileged workers have none. GPUDeck does not depend on it:

- a hard per-process bound: RLIMIT_DATA at `limit // nprocs` (at least 512 MiB), inherited
  by torchrun's agent and every rank (and their children). An allocation past it fails in the
  rank (MemoryError, "can't allocate memory") instead of reaching the machine. RLIMIT_DATA, not
  RLIMIT_AS: CUDA reserves terabytes of address space it never touches, so an address-space
  limit would break any GPU program. The trade-off: it bounds each process's private writable
  memory (allocated, not only resident) to its share, not the job's total; a rank cannot borrow
  an idle rank's share;
- the job's total: every `interval_s`, the resident memory of all the job's processes is
  summed; past the limit, the guard kills the job and names the rank holding the most. This
  covers what the per-process bound cannot (a rank's DataLoader workers, each with a share of
  its own), within one interval.

Each look also records every rank's PID (for the sampler: GPUDeck's process on a device, not
an external one) and its peak resident memory (VmHWM), written to `<run_dir>/ranks.json`.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RANKS_FILE = "ranks.json"
GIB = 1024**3
# Torch on CPU needs ~300 MiB of data per process before the script allocates anything, and
# torchrun's agent (a process under the same bound) imports it too: a smaller share would fail
# the agent at import, before any rank could say why. The job's total is still the watch's.
MIN_SHARE_BYTES = 512 * 1024**2


def format_bytes(size: int) -> str:
    if size >= GIB:
        return f"{size / GIB:.3g} GiB"
    return f"{size / 1024**2:.0f} MiB"


def exceeded_text(limit_bytes: int, rank: int | None) -> str:
    """The one line that says a job was stopped for memory (schemas/failure.py shows it)."""
    by = f" by rank {rank}" if rank is not None else ""
    return f"host memory limit {format_bytes(limit_bytes)} exceeded{by}"


def bound_process(limit_bytes: int, nprocs: int) -> None:
    """In the child before exec: its share of the job's limit as RLIMIT_DATA."""
    share = max(MIN_SHARE_BYTES, limit_bytes // max(1, nprocs))
    resource.setrlimit(resource.RLIMIT_DATA, (share, share))


@dataclass(frozen=True)
class ProcessMemory:
    pid: int
    rank: int | None  # RANK of torchrun's worker (and its children); None for the agent
    rss_bytes: int
    hwm_bytes: int  # peak resident memory so far


def _status_bytes(status: str, key: str) -> int:
    for line in status.splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024  # reported in kB
    return 0


def _rank_of(pid: int) -> int | None:
    """RANK in the environment torchrun gave the process (its workers have TORCHELASTIC_RUN_ID)."""
    with open(f"/proc/{pid}/environ", "rb") as fh:
        env = dict(v.partition(b"=")[::2] for v in fh.read().split(b"\0") if v)
    rank = env.get(b"RANK")
    return int(rank) if rank is not None and b"TORCHELASTIC_RUN_ID" in env else None


def read_processes(pids: Iterable[int]) -> list[ProcessMemory]:
    found = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            rank = _rank_of(pid)
        except (OSError, ValueError):
            continue  # gone since it was listed
        found.append(
            ProcessMemory(
                pid, rank, _status_bytes(status, "VmRSS:"), _status_bytes(status, "VmHWM:")
            )
        )
    return found


@dataclass
class RankMemory:
    """What the guard's looks have seen of the job's ranks, and the limit's verdict."""

    run_dir: Path
    limit_bytes: int | None
    pids: dict[int, int] = field(default_factory=dict)  # rank -> its (first) process
    peak_rss_bytes: dict[int, int] = field(default_factory=dict)  # rank -> bytes
    exceeded_by: int | None = None  # the rank that held the most when the limit was passed
    exceeded: bool = False
    _written: Any = None

    def look(self, processes: list[ProcessMemory]) -> bool:
        """Record one look; True when the job's processes together passed the limit."""
        held: dict[int, int] = {}
        for p in processes:
            if p.rank is None:
                continue
            self.pids.setdefault(p.rank, p.pid)
            held[p.rank] = held.get(p.rank, 0) + p.rss_bytes
            # A rank's peak: its own high-water mark, or what it and its children held at once.
            peak = max(p.hwm_bytes if p.pid == self.pids[p.rank] else 0, held[p.rank])
            self.peak_rss_bytes[p.rank] = max(self.peak_rss_bytes.get(p.rank, 0), peak)
        total = sum(p.rss_bytes for p in processes)
        if self.limit_bytes is not None and total > self.limit_bytes and not self.exceeded:
            self.exceeded = True
            self.exceeded_by = max(held, key=lambda r: held[r]) if held else None
        self.write()
        return self.exceeded

    def record(self) -> dict[str, Any]:
        return {
            "limit_bytes": self.limit_bytes,
            "ranks": {
                str(r): {"pid": self.pids[r], "peak_rss_bytes": self.peak_rss_bytes.get(r, 0)}
                for r in sorted(self.pids)
            },
            "exceeded": self.exceeded,
            "exceeded_by": self.exceeded_by,
        }

    def write(self) -> None:
        """Atomically, and only when something changed (the worker reads it while it runs)."""
        record = self.record()
        if record == self._written:
            return
        tmp = self.run_dir / f".{RANKS_FILE}.tmp"
        tmp.write_text(json.dumps(record))
        os.replace(tmp, self.run_dir / RANKS_FILE)
        self._written = record


def watch(
    memory: RankMemory,
    job_pids: Callable[[], list[int]],
    on_exceeded: Callable[[], None],
    stopped: Callable[[float], bool],
    interval_s: float,
) -> None:
    """Look every `interval_s` until `stopped`; call `on_exceeded` once when the limit is passed."""
    while not stopped(interval_s):
        if memory.look(read_processes(job_pids())):
            on_exceeded()
            return


def read_ranks(run_dir: Path) -> dict[str, Any] | None:
    """What the guard last wrote (None before its first look)."""
    try:
        data = json.loads((run_dir / RANKS_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
