"""What a finished job's measurements say about the next submission's declarations.

Pure: the declared figures and the measured ones in, one line per figure out, e.g.
"peak 3.1 GiB of 8 GiB declared per rank: 4 GiB would do". A memory suggestion keeps a
quarter of headroom over the peak, rounded up to a step people type (256 MiB under 4 GiB, then
1 GiB); a time limit, half again the run's duration, rounded up to minutes or hours.
"""

from __future__ import annotations

import math

MIB = 1024**2
GIB = 1024**3
HEADROOM = 1.25
WASTE = 1.5  # suggest a smaller figure only when the declared one is this much too big


def nice_bytes(size: float) -> int:
    step = 256 * MIB if size < 4 * GIB else GIB
    return max(step, math.ceil(size / step) * step)


def format_bytes(size: int) -> str:
    if size >= GIB:
        return f"{size / GIB:.3g} GiB"
    return f"{size / MIB:.0f} MiB"


def advise(peak: int, declared: int, what: str, field: str) -> str | None:
    """One line about a declared figure against its measured peak; None when it fits well."""
    suggested = nice_bytes(peak * HEADROOM)
    said = f"peak {format_bytes(peak)}"
    if peak > declared:
        return (
            f"{said} passed the {format_bytes(declared)} declared {what}: "
            f"declare {format_bytes(suggested)} ({field})"
        )
    if declared >= peak * WASTE and suggested < declared:
        return (
            f"{said} of {format_bytes(declared)} declared {what}: "
            f"{format_bytes(suggested)} would do ({field})"
        )
    return None


def host_advice(peaks: list[int], limit: int | None, exceeded: bool) -> str | None:
    """About the host memory limit, from the ranks' peak RSS (their sum: they may peak at once)."""
    if limit is None or not peaks:
        return None
    total = sum(peaks)
    if exceeded:
        return (
            f"the job passed its host memory limit of {format_bytes(limit)}: ask for more "
            "(host_memory_bytes), or use less per rank"
        )
    return advise(total, limit, "as host memory", "host_memory_bytes")


def _duration_text(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def nice_seconds(seconds: float) -> int:
    step = 60 if seconds <= 2 * 3600 else 3600
    return max(step, math.ceil(seconds / step) * step)


# A shorter run is not worth a word: it ends before the limit would matter to the queue.
TIME_ADVICE_MIN_RUN_S = 600


def time_advice(ran_s: float, limit_s: int) -> str | None:
    """About a succeeded job's time limit: the scheduler backfills by it, so a tight one starts
    sooner. Only for a run of 10 minutes or more whose limit is far above what it needed."""
    suggested = nice_seconds(ran_s * 1.5)
    if ran_s < TIME_ADVICE_MIN_RUN_S or limit_s < 4 * ran_s or suggested >= limit_s:
        return None
    return (
        f"Ran {_duration_text(nice_seconds(ran_s))} of its {_duration_text(limit_s)} time limit: "
        f"a limit of {_duration_text(suggested)} would do, and lets the scheduler start it sooner."
    )
