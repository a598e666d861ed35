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
from gpudeck.services.jobs.events import job_stream

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
    num_items: int | None = None  # every item of the job
    output_dir: str | None = None  # where its chunks (and a kind's consolidated file) go

    @property
    def chunks_done(self) -> int:
        """Chunks written so far, by this run and earlier ones."""
        return self.chunks_done_before + sum(r.chunks_done for r in self.ranks)

    @property
    def items_done(self) -> int:
        """Items this run has mapped."""
        return sum(r.items_done for r in self.ranks)

    @property
    def items_per_s(self) -> float:
        """The job's rate now: the ranks still working (one that finished its share adds
        nothing to what is left)."""
        return sum(r.items_per_s for r in self.ranks if not _finished(r))

    @property
    def eta_s(self) -> float | None:
        """Seconds to the last chunk at today's rate; None until there is a rate to go by."""
        if self.num_chunks is None or self.num_items is None:
            return None
        chunks_left = max(0, self.num_chunks - self.chunks_done)
        if chunks_left == 0:
            return 0.0
        rate = self.items_per_s
        if rate <= 0:
            return None
        # chunks hold chunk_size items each but the last: counting in the job's mean is close
        return chunks_left * self.num_items / self.num_chunks / rate


def _finished(rank: RankProgress) -> bool:
    return rank.chunks_total is not None and rank.chunks_done >= rank.chunks_total


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
        num_items=_int_or_none(head.get("num_items")),
        output_dir=head.get("output_dir"),
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
