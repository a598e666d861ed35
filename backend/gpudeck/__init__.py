"""GPUDeck. `report` is the one thing a script job imports from it (docs/script-jobs.md):
standard library only, so the worker can copy this file onto any interpreter's path."""

from __future__ import annotations

import json
import math
import os

__version__ = "0.1.0"


def report(step: int, total: int | None = None, **metrics: float) -> None:
    """Record `metrics` at `step` for the job's charts (rank 0 only; a no-op outside GPUDeck).

    Each call appends one JSON line to $GPUDECK_METRICS_FILE; values may be anything `float()`
    takes (a 0-d tensor too). `total`, the number of steps, makes the job's progress bar."""
    path = os.environ.get("GPUDECK_METRICS_FILE")
    if not path or os.environ.get("RANK", "0") != "0":
        return
    values = {name: float(value) for name, value in metrics.items()}
    record = {"step": int(step), **{k: v for k, v in values.items() if math.isfinite(v)}}
    if total is not None:
        record["total"] = int(total)
    # One write of a whole line in append mode: a reader never sees half a record.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)
