"""The event wire format, one definition for the ranks that publish and the readers.

A job's events go to its Redis stream (or `<run_dir>/events.jsonl`) as flat string fields:
`type`, `job_id`, `rank` (WORKER_RANK: the worker itself), `ts` (unix seconds) and `data`
(a JSON object). The ranks encode with `encode`; the worker's relay and the WebSocket route
read with `decode`. docs/engine.md lists the types and their data. Torch-free.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

STREAM_MAXLEN = 10_000  # approximate cap per job stream; the worker persists what it needs
WORKER_RANK = -1  # events the worker adds (status changes)


@dataclass(frozen=True)
class Event:
    type: str
    job_id: int
    rank: int
    ts: float
    data: dict[str, Any] = field(default_factory=dict)
    # False when `data` was not a JSON object: the relay skips such an event, the WebSocket
    # passes it on with empty data.
    intact: bool = True

    def frame(self) -> dict[str, Any]:
        """The WebSocket frame the dashboard reads (no job id: the socket is per job)."""
        return {"type": self.type, "rank": self.rank, "ts": self.ts, "data": self.data}


def encode(
    event_type: str,
    job_id: int,
    rank: int,
    data: Mapping[str, Any],
    ts: float | None = None,
) -> dict[str, str]:
    """One event as flat strings (Redis stream fields); `data` is a JSON object."""
    return {
        "type": event_type,
        "job_id": str(job_id),
        "rank": str(rank),
        "ts": f"{time.time() if ts is None else ts:.6f}",
        "data": json.dumps(dict(data)),
    }


def decode(fields: Mapping[str, str]) -> Event:
    """An event from its fields; missing fields read as empty (type), 0 (rank, ts, job id)."""
    try:
        data = json.loads(fields.get("data", "{}"))
        intact = isinstance(data, dict)
    except json.JSONDecodeError:
        data, intact = {}, False
    return Event(
        type=fields.get("type", ""),
        job_id=int(fields.get("job_id", "0")),
        rank=int(fields.get("rank", "0")),
        ts=float(fields.get("ts", "0")),
        data=data if intact else {},
        intact=intact,
    )
