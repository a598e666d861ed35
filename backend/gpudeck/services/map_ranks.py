"""A map job's progress per rank, from the chunk events its ranks already publish.

Each `map_chunk` event carries the rank's own running counts (chunks done in this run, its
share when the strategy fixes one, items done, items/s), so the newest event of each rank is
enough: events the capped stream has dropped take nothing with them. `map_start` gives a rank
that has not finished a chunk yet (or has none to do) its place and share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import redis

from gpudeck.engine.events import STREAM_MAXLEN, Event, decode
from gpudeck.services.job_events import job_stream

MAP_EVENTS = ("map_start", "map_chunk")


@dataclass
class RankProgress:
    rank: int
    chunks_done: int = 0
    chunks_total: int | None = None  # None: `dynamic`, the rank claims chunks as it goes
    items_done: int = 0
    items_per_s: float = 0.0


@dataclass
class MapRanks:
    num_chunks: int | None  # every chunk of the job (written before this run included)
    chunks_done_before: int  # written by an earlier run (resume)
    strategy: str | None
    ranks: list[RankProgress]


def summarize(events: Iterable[Event]) -> MapRanks:
    """Per-rank progress from a job's events in stream order (other types are ignored)."""
    ranks: dict[int, RankProgress] = {}
    head: dict[str, Any] = {}
    for event in events:
        data = event.data
        if event.type == "map_start":
            head = data
            rank = ranks.setdefault(event.rank, RankProgress(event.rank))
            rank.chunks_total = _int_or_none(data.get("rank_chunks"))
        elif event.type == "map_chunk":
            rank = ranks.setdefault(event.rank, RankProgress(event.rank))
            done = int(data.get("rank_chunks_done", rank.chunks_done + 1))
            if done >= rank.chunks_done:  # a re-sent older event never moves a bar back
                rank.chunks_done = done
                rank.chunks_total = _int_or_none(data.get("rank_chunks", rank.chunks_total))
                rank.items_done = int(data.get("items_done", 0))
                rank.items_per_s = float(data.get("items_per_s", 0.0))
    return MapRanks(
        num_chunks=_int_or_none(head.get("num_chunks")),
        chunks_done_before=int(head.get("chunks_done", 0)),
        strategy=head.get("strategy"),
        ranks=[ranks[r] for r in sorted(ranks)],
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def map_ranks(client: redis.Redis, job_id: int) -> MapRanks:
    """Read the job's stream (capped, so bounded) and summarize its map events."""
    entries = cast(
        list[tuple[str, dict[str, str]]],  # decode_responses=True: strings
        client.xrange(job_stream(job_id), count=2 * STREAM_MAXLEN),
    )
    events = (decode(fields) for _, fields in entries)
    return summarize(e for e in events if e.type in MAP_EVENTS)
