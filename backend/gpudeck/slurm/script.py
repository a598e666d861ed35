"""A batch script from typed values, and a sweep's array split past the cluster's MaxArraySize.

Nothing a user typed reaches the script as text: the command is a typed argv list quoted with
shlex.quote, the #SBATCH values are numbers or names checked against Slurm's own alphabet, and
environment values are quoted. One GPUDeck job is one Slurm job: its ranks are the tasks of one
`srun`, and the batch shell passes USR1 (the time limit's warning, or GPUDeck's cancel) to them
for a final checkpoint.

srun needs slurmctld to confirm the allocation and create the step; it tries for MessageTimeout
seconds (one connection a second) and then exits without starting anything. The script starts
srun again when, and only when, no rank started: each rank creates a file named for the attempt
(on the shared filesystem, any node) before it execs the command, so a missing file means the
command ran nowhere and a new step cannot run anything twice. The retries back off (1, 2, 4 ...
30 s) and stop `step_retry_s` after the first srun; USR1 during a pause ends the script at once.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

MIB = 1024**2
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")  # partitions, accounts, QOS, GRES types
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r"/[A-Za-z0-9_./+-]*")  # #SBATCH lines are not shell: no quoting to rely on


@dataclass(frozen=True, kw_only=True)
class ArraySpec:
    """One Slurm array of a sweep: tasks 0..count-1 are members offset..offset+count-1."""

    count: int
    max_parallel: int
    offset: int = 0
    after: str | None = None  # the array before it (a split sweep): start once it has ended

    def __post_init__(self) -> None:
        _positive(count=self.count, max_parallel=self.max_parallel)
        if self.offset < 0:
            raise ValueError(f"offset must be >= 0, not {self.offset}")
        if self.after is not None and not self.after.isdigit():
            raise ValueError(f"after must be a Slurm job id, not {self.after!r}")


@dataclass(frozen=True, kw_only=True)
class BatchSpec:
    gpudeck_job_id: int
    argv: tuple[str, ...]  # one rank's command; srun starts it nodes x ntasks_per_node times
    output_dir: PurePosixPath  # on the shared filesystem: Slurm writes the batch output there
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodes: int = 1
    ntasks_per_node: int = 1
    gpus_per_node: int = 0
    gpu_type: str | None = None
    mem_bytes_per_node: int | None = None
    time_limit_s: int | None = None
    # USR1 this long before the time limit, for a final checkpoint. Slurm checks time limits
    # every 30 s, so the signal comes up to 30 s later than asked: keep it well above that.
    signal_before_s: int = 120
    env: Mapping[str, str] = field(default_factory=dict)
    array: ArraySpec | None = None
    held: bool = False  # queued held: it starts once released (`scontrol release`)
    # Each rank's output to <rank_logs>/rank<global rank>.log (srun's %t), where GPUDeck ships
    # it from; None: all ranks into the batch output.
    # For an array, each task's under <rank_logs>/task-<index>/ (srun's %a), as is the marker.
    rank_logs: PurePosixPath | None = None
    # A file the batch shell creates when USR1 reaches it: ranks that return after the time
    # limit's warning end COMPLETED in Slurm's books, and this says it was the limit.
    signal_marker: PurePosixPath | None = None
    # The job's name and comment: gpudeck-<gpudeck_job_id> unless given (a sweep's array).
    label: str | None = None
    # How long srun is started again while no rank has started (slurmctld unreachable right
    # after the allocation), from the first srun; 0: once only.
    step_retry_s: int = 180

    def __post_init__(self) -> None:
        if not self.argv:
            raise ValueError("argv must name a command")
        _positive(nodes=self.nodes, ntasks_per_node=self.ntasks_per_node)
        for name, value in (("gpus_per_node", self.gpus_per_node),):
            if value < 0:
                raise ValueError(f"{name} must be >= 0, not {value}")
        for name in ("partition", "account", "qos", "gpu_type", "label"):
            value = getattr(self, name)
            if value is not None and not _NAME.fullmatch(value):
                raise ValueError(f"{name} {value!r} is not a Slurm name")
        for name in ("output_dir", "rank_logs", "signal_marker"):
            path = getattr(self, name)
            if path is not None and not _PATH.fullmatch(str(path)):
                raise ValueError(f"{name} must be an absolute plain path, not {path}")
        for key in self.env:
            if not _ENV_NAME.fullmatch(key):
                raise ValueError(f"{key!r} is not an environment variable name")
        if self.time_limit_s is not None:
            _positive(time_limit_s=self.time_limit_s)
        if not 0 <= self.signal_before_s <= 65535:  # sbatch's own bound
            raise ValueError(f"signal_before_s must be 0-65535, not {self.signal_before_s}")
        if self.step_retry_s < 0:
            raise ValueError(f"step_retry_s must be >= 0, not {self.step_retry_s}")


def render(spec: BatchSpec) -> str:
    """The batch script for `spec`, for `sbatch --parsable` on its standard input."""
    lines = ["#!/bin/bash", *(f"#SBATCH {option}" for option in directives(spec))]
    exports = {**spec.env, "GPUDECK_JOB_ID": str(spec.gpudeck_job_id)}
    lines += [f"export {key}={shlex.quote(value)}" for key, value in sorted(exports.items())]
    if spec.array is not None:
        lines.append(f"export GPUDECK_MEMBER_INDEX=$(({spec.array.offset} + SLURM_ARRAY_TASK_ID))")
    srun = ["srun", "--kill-on-bad-exit=1"]
    marker = None if spec.signal_marker is None else str(spec.signal_marker)
    if spec.array is not None and spec.rank_logs is not None:
        # Each task (a sweep member) has its own directory: task-<its index> under rank_logs.
        lines.append(f'export GPUDECK_TASK_DIR="{spec.rank_logs}/task-$SLURM_ARRAY_TASK_ID"')
        srun.append(f"--output={spec.rank_logs}/task-%a/rank%t.log")
        if spec.signal_marker is not None:
            marker = f'"$GPUDECK_TASK_DIR"/{spec.signal_marker.name}'
    elif spec.rank_logs is not None:
        srun.append(f"--output={spec.rank_logs / 'rank%t.log'}")
    # A plain path (checked): nothing in it can leave the trap's single quotes.
    mark = f"touch {marker}; " if marker is not None else ""
    if marker is not None:
        lines.append(f"rm -f {marker}  # a requeued job starts unsignalled")
    lines += [
        "# USR1 reaches this shell before the time limit (--signal=B:) and on GPUDeck's cancel",
        "# (scancel --batch --signal=USR1): every rank gets it, for a final checkpoint; during a",
        "# pause between two sruns it ends the pause, and the script.",
        "signalled=",
        f"trap '{mark}kill -USR1 \"$ranks\" 2>/dev/null; signalled=1' USR1",
        *_step_with_retries(spec, srun),
    ]
    return "\n".join(lines) + "\n"


# Each rank, before the command: the attempt's file, then the command itself (exec: same
# process, so signals and exit codes are the command's). No file, no command.
_RANK_WRAPPER = ("/bin/sh", "-c", 'touch -- "$1" && shift && exec "$@"', "gpudeck-rank")
STEP_RETRY_PAUSE_MAX_S = 30


def _step_with_retries(spec: BatchSpec, srun: list[str]) -> list[str]:
    """srun, again after a pause while no rank of it started, until step_retry_s has passed."""
    # Named per job, requeue and attempt: the batch node never looked the name up before, so a
    # shared filesystem's cached "no such file" cannot hide a rank's file.
    started = f"{spec.output_dir}/.gpudeck-step-$SLURM_JOB_ID-${{SLURM_RESTART_COUNT:-0}}"
    step = f'{shlex.join([*srun, *_RANK_WRAPPER])} "$started.$attempt" {shlex.join(spec.argv)} &'
    return [
        f'started="{started}"',
        f"retry_until=$((SECONDS + {spec.step_retry_s})) pause_s=1 attempt=0",
        "while :; do",
        "  attempt=$((attempt + 1))",
        f"  {step}",
        "  ranks=$!",
        "  while :; do",
        '    wait "$ranks"; status=$?',
        '    (( status > 128 )) && kill -0 "$ranks" 2>/dev/null || break  # woken by the trap',
        "  done",
        "  [[ -e $started.$attempt || -n $signalled ]] && break  # ran: never again; or stopped",
        "  (( SECONDS + pause_s <= retry_until )) || break",
        '  echo "gpudeck: no rank started (srun exited $status); srun again in $pause_s s" >&2',
        '  sleep "$pause_s" & ranks=$!  # the trap ends it',
        '  wait "$ranks"',
        "  [[ -n $signalled ]] && break",
        f"  pause_s=$((pause_s * 2 > {STEP_RETRY_PAUSE_MAX_S} ? {STEP_RETRY_PAUSE_MAX_S} "
        ": pause_s * 2))",
        "done",
        'rm -f "$started".*',
        'exit "$status"',
    ]


def directives(spec: BatchSpec) -> list[str]:
    """The #SBATCH options, each one token (sbatch reads them without a shell)."""
    out = [
        f"--job-name=gpudeck-{spec.label or spec.gpudeck_job_id}",
        f"--comment=gpudeck:{spec.label or spec.gpudeck_job_id}",  # who, if Slurm reuses ids
        f"--nodes={spec.nodes}",
        f"--ntasks-per-node={spec.ntasks_per_node}",
        f"--output={spec.output_dir / ('slurm-%A_%a.out' if spec.array else 'slurm-%j.out')}",
    ]
    out += [f"--{name}={getattr(spec, name)}" for name in ("partition", "account", "qos")
            if getattr(spec, name) is not None]  # fmt: skip
    if spec.gpus_per_node:
        kind = f"{spec.gpu_type}:" if spec.gpu_type else ""
        out.append(f"--gres=gpu:{kind}{spec.gpus_per_node}")
    if spec.mem_bytes_per_node is not None:
        out.append(f"--mem={math.ceil(spec.mem_bytes_per_node / MIB)}M")
    if spec.time_limit_s is not None:
        out.append(f"--time={slurm_time(spec.time_limit_s)}")
        if spec.signal_before_s:
            out.append(f"--signal=B:USR1@{spec.signal_before_s}")
    if spec.held:
        out.append("--hold")
    if spec.array is not None:
        a = spec.array
        out.append(f"--array=0-{a.count - 1}%{a.max_parallel}")
        if a.after is not None:
            out.append(f"--dependency=afterany:{a.after}")
    return out


def slurm_time(seconds: int) -> str:
    """D-HH:MM:SS, rounded up to the minute: Slurm keeps time limits in whole minutes."""
    minutes = math.ceil(seconds / 60)
    days, minutes = divmod(minutes, 24 * 60)
    return f"{days}-{minutes // 60:02d}:{minutes % 60:02d}:00"


@dataclass(frozen=True)
class ArrayChunk:
    offset: int  # the sweep member of the chunk's task 0
    count: int


def split_array(members: int, max_array_size: int) -> list[ArrayChunk]:
    """A sweep of `members` as arrays Slurm accepts: task indices must stay below MaxArraySize,
    so each chunk is tasks 0..count-1 with its members offset. The caller submits them in order,
    each `after` the one before, so the sweep's max_parallel holds across chunks (a chunk's
    throttle is its own)."""
    _positive(members=members, max_array_size=max_array_size)
    return [
        ArrayChunk(offset, min(max_array_size, members - offset))
        for offset in range(0, members, max_array_size)
    ]


def _positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1, not {value}")
