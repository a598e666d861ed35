"""Slurm's output as typed records: squeue and sacct lines, scontrol's node and config lines."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gpudeck.slurm.states import ReasonCode, State, reason_of, state_of

# The comment goes last: it is the one field a site's other tools might write a `|` into.
SQUEUE_FORMAT = "%i|%A|%T|%r|%D|%N|%b|%k"
SACCT_FIELDS = "JobID,JobIDRaw,State,ExitCode,Reason,NodeList,AllocTRES,Comment"
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_]*)=")
_UNTYPED_GPUS = re.compile(r"gres[:/]gpu[:=](\d+)")  # gres/gpu=2 (AllocTRES), gres:gpu:2
_TYPED_GPUS = re.compile(r"gres[:/]gpu:[^:=,]+[:=](\d+)")  # gres:gpu:h100:2 (squeue %b)
_Read = tuple[State, str | None, ReasonCode | None, str | None]


@dataclass(frozen=True)
class JobState:
    """One Slurm job (or array task) as a poll read it."""

    job_id: str  # Slurm's name for it: "123", or "123_4" for task 4 of array 123
    state: State
    slurm_state: str | None = None  # as Slurm printed it; None when nothing was read
    reason_code: ReasonCode | None = None
    reason: str | None = None  # a pending job's reason, or why the state is unknown
    exit_code: int | None = None
    exit_signal: int | None = None
    nodes: str | None = None  # Slurm's node list, e.g. n[1-2]
    gpus: int | None = None  # over all its nodes
    comment: str | None = None  # gpudeck:<job id> for GPUDeck's jobs
    source: Literal["squeue", "sacct", "none"] = "none"

    @property
    def array_job_id(self) -> str:
        return self.job_id.split("_", 1)[0]


def unknown(job_id: str, cause: str) -> JobState:
    return JobState(job_id, "unknown", reason=cause)


def _read(slurm_state: str, slurm_reason: str) -> _Read:
    """A state as GPUDeck reads it: its word, Slurm's state word, a pending reason."""
    state = state_of(slurm_state)
    if state is None:
        return "unknown", slurm_state, None, f"Slurm state {slurm_state} is not one GPUDeck knows"
    reason = reason_of(slurm_reason) if state == "queued" else None
    code, why = reason if reason else (None, None)
    return state, slurm_state.split(" ", 1)[0], code, why


def parse_squeue(stdout: str) -> list[JobState]:
    out = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        job_id, _raw, slurm_state, reason, node_count, nodes, per_node, comment = line.split("|", 7)
        state, word, code, why = _read(slurm_state, reason)
        gpus = _gpus(per_node)
        for one in expand(job_id):
            out.append(
                JobState(
                    one,
                    state,
                    word,
                    code,
                    why,
                    nodes=_value(nodes),
                    gpus=gpus * int(node_count) if gpus is not None and state != "queued" else None,
                    comment=_value(comment),
                    # COMPLETED is Slurm's word for "every process exited 0": the exit code is
                    # known before slurmdbd's record (which sacct reads) catches up.
                    exit_code=0 if word == "COMPLETED" else None,
                    source="squeue",
                )
            )
    return out


def parse_sacct(stdout: str) -> list[JobState]:
    out = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        job_id, _raw, slurm_state, exit_code, reason, nodes, tres, comment = line.split("|", 7)
        state, word, code, why = _read(slurm_state, reason)
        code_, _, signal_ = exit_code.partition(":")
        for one in expand(job_id):
            out.append(
                JobState(
                    one,
                    state,
                    word,
                    code,
                    why,
                    exit_code=int(code_) if code_.isdigit() else None,
                    exit_signal=int(signal_) if signal_.isdigit() else None,
                    nodes=_value(nodes) if nodes != "None assigned" else None,
                    gpus=_gpus(tres) if state != "queued" else None,
                    comment=_value(comment),
                    source="sacct",
                )
            )
    return out


def expand(job_id: str) -> list[str]:
    """`123_[1,3-5%2]` (pending tasks, as sacct and squeue group them) -> 123_1, 123_3, ..."""
    base, _, tasks = job_id.partition("_")
    if not tasks.startswith("["):
        return [job_id]
    return [f"{base}_{k}" for k, _ in _numbers(tasks.strip("[]").split("%", 1)[0])]


def _numbers(ranges: str) -> list[tuple[int, int]]:
    """Slurm's "1,3-5" as (number, digits written): 1 3 4 5; "08-10" keeps its width, 2."""
    out = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        out += [(k, len(first)) for k in range(int(first), int(last or first) + 1)]
    return out


def _gpus(text: str) -> int | None:
    """GPUs in a TRES list. AllocTRES names the same GPUs twice (gres/gpu=2 and
    gres/gpu:h100=2): the untyped entry is the count; a typed one alone where there is none."""
    found = _UNTYPED_GPUS.search(text) or _TYPED_GPUS.search(text)
    return int(found.group(1)) if found else None


def _value(text: str) -> str | None:
    return None if text in ("", "N/A", "(null)") else text


@dataclass(frozen=True)
class GpuGres:
    type: str | None  # the GRES type (e.g. h100); None where the site gives none
    count: int
    used: int
    used_indices: tuple[int, ...]  # the node's GPU indices in use, as Slurm numbers them


@dataclass(frozen=True)
class NodeInfo:
    name: str
    state: str  # Slurm's, lower case: idle, mixed, allocated, down+drain, ...
    partitions: tuple[str, ...]
    cpus: int
    cpus_allocated: int
    memory_mb: int
    memory_allocated_mb: int
    gpus: tuple[GpuGres, ...]


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    state: str  # Slurm's, lower case: up, down, drain, inactive
    nodes: str | None  # Slurm's node list, e.g. n[1-2]
    max_time: str | None  # as Slurm prints it (UNLIMITED, 1-00:00:00); None where unset

    @property
    def max_time_s(self) -> int | None:
        """The partition's time limit in seconds; None when unlimited or unset."""
        return None if self.max_time is None else slurm_seconds(self.max_time)


def slurm_seconds(text: str) -> int | None:
    """A Slurm time ("UNLIMITED", "2-12", "1-00:00:00", "01:30:00", "30:00" = MM:SS, "45" =
    minutes) in seconds; None for unlimited or infinite."""
    if text.upper() in ("UNLIMITED", "INFINITE", "NONE", ""):
        return None
    days, _, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = [*parts, 0, 0][:3]
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(parts) == 3:
        return (parts[0] * 60 + parts[1]) * 60 + parts[2]
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return parts[0] * 60


def parse_partitions(stdout: str) -> list[PartitionInfo]:
    """`scontrol -o show partition`: one partition a line."""
    out = []
    for line in stdout.splitlines():
        if not line.startswith("PartitionName="):
            continue
        kv = key_values(line)
        out.append(
            PartitionInfo(
                name=kv["PartitionName"],
                state=kv.get("State", "unknown").lower(),
                nodes=_value(kv.get("Nodes", "")),
                max_time=_value(kv.get("MaxTime", "")),
            )
        )
    return out


def key_values(line: str) -> dict[str, str]:
    """scontrol's one-line `Key=value Key=value` records; values may hold spaces (OS=Linux 6.1)."""
    keys = list(_KEY.finditer(line))
    return {
        m.group(1): line[m.end() : keys[k + 1].start() if k + 1 < len(keys) else len(line)].strip()
        for k, m in enumerate(keys)
    }


def parse_nodes(stdout: str) -> list[NodeInfo]:
    """`scontrol -d -o show node`: one node a line, its GRES and the GRES in use."""
    nodes = []
    for line in stdout.splitlines():
        if not line.startswith("NodeName="):
            continue
        kv = key_values(line)
        used = {gres_type: (n, idx) for gres_type, n, idx in _gres(kv.get("GresUsed", ""))}
        gpus = tuple(
            GpuGres(t, n, *used.get(t, (0, ())))
            for t, n, _ in _gres(kv.get("Gres", ""))
        )  # fmt: skip
        nodes.append(
            NodeInfo(
                name=kv["NodeName"],
                state=kv.get("State", "unknown").lower(),
                partitions=tuple(p for p in kv.get("Partitions", "").split(",") if p),
                cpus=int(kv.get("CPUTot", 0)),
                cpus_allocated=int(kv.get("CPUAlloc", 0)),
                memory_mb=int(kv.get("RealMemory", 0)),
                memory_allocated_mb=int(kv.get("AllocMem", 0)),
                gpus=gpus,
            )
        )
    return nodes


def _gres(text: str) -> list[tuple[str | None, int, tuple[int, ...]]]:
    """`gpu:h100:2(S:0-1),gpu:a100:1(IDX:0)` -> the GPU entries: type, count, indices used."""
    out = []
    for entry in re.split(r",(?![^(]*\))", text):  # commas outside parentheses
        head, _, detail = entry.partition("(")
        parts = head.split(":")
        if parts[0] != "gpu" or len(parts) < 2:
            continue
        count = int(re.sub(r"\D.*", "", parts[-1]) or 0)
        gres_type = parts[1] if len(parts) > 2 else None
        out.append((gres_type, count, _indices(detail.rstrip(")"))))
    return out


def _indices(detail: str) -> tuple[int, ...]:
    if not detail.startswith("IDX:") or detail == "IDX:N/A":
        return ()
    out: list[int] = []
    for part in detail.removeprefix("IDX:").split(","):
        first, _, last = part.partition("-")
        out += range(int(first), int(last or first) + 1)
    return tuple(out)


def parse_config(stdout: str) -> dict[str, str]:
    """`scontrol show config`: `Name = value` lines."""
    out = {}
    for line in stdout.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() and " " not in name.strip():
            out[name.strip()] = value.strip()
    return out


def expand_hostlist(hostlist: str) -> list[str]:
    """Slurm's compressed node list in full: "n[1-3,7],gpu05" -> n1 n2 n3 n7 gpu05 (zero
    padding kept: "g[08-10]" -> g08 g09 g10). What `scontrol show hostnames` prints, without
    a command."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", hostlist):
        match = re.fullmatch(r"(.*?)\[([^\]]*)\](.*)", part)
        if match is None:
            names.append(part)
            continue
        head, ranges, tail = match.groups()
        names += [f"{head}{k:0{width}d}{tail}" for k, width in _numbers(ranges)]
    return names
