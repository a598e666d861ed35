"""A failed job's cause in one line, read from the error text the worker stored.

The worker stores `rank N failed: ...` followed by the rank's traceback, or `rank N was killed
by SIGKILL (...); the end of its log:` followed by that log. People want the last exception
line (what went wrong), not the first traceback line (where the program started)."""

from __future__ import annotations

import re

MAX_CHARS = 300
TRACEBACK_HEADER = "Traceback (most recent call last):"
MEMORY_LIMIT = "host memory limit"  # engine/host_memory.exceeded_text
# The sampler's verdict on a job sharing a device (telemetry/watchdog.KillDecision.cause),
# which the worker puts first: "used 9.3 GiB of its 8.0 GiB reservation on node/2".
_RESERVATION = re.compile(r"^used .+ of its .+ reservation on \S+$")
# "rank 1 failed: ...", or a job across nodes' "on node node-a: rank 1 failed: ..."
_RANK = re.compile(r"^((?:on node \S+: )?)rank (\d+)\b")
# What torch prefixes each line a rank prints once it joined a process group with (its
# exception hook: "[rank1]: Traceback ..."), or torchrun's --tee ("[default0]:").
_LINE_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:\s?")


def _last_exception_line(lines: list[str]) -> str | None:
    """The exception line of the last traceback: the first unindented line after its frames
    (a multi-line message continues below it; a chained exception has its own header)."""
    starts = [i for i, line in enumerate(lines) if line.strip() == TRACEBACK_HEADER]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line.strip() and not line[:1].isspace():
            return line.strip()
    return None


def failure_cause(error: str | None) -> str | None:
    """One line saying why a job ended, or None when it has no error text."""
    if not error or not error.strip():
        return None
    lines = [_LINE_PREFIX.sub("", line) for line in error.strip().splitlines()]
    first = lines[0].strip()
    exception = _last_exception_line(lines)
    rank = _RANK.match(first)
    if first.startswith(MEMORY_LIMIT) or _RESERVATION.match(first):  # the verdict comes first
        cause = first
    elif exception is not None and "was killed by" not in first:
        cause = f"{rank.group(1)}rank {rank.group(2)}: {exception}" if rank else exception
    else:
        cause = first.split("; the end of its log:")[0].rstrip(":").strip()
    return cause if len(cause) <= MAX_CHARS else cause[: MAX_CHARS - 1] + "…"


def failed_rank(error: str | None) -> int | None:
    """The rank a failed job's error names first ("rank 1 failed: ..."), or None."""
    found = _RANK.match(error.strip()) if error else None
    return int(found.group(2)) if found else None
