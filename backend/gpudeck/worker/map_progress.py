"""A map job's progress in total, from its ranks' `map_start` and `map_chunk` events.

No rank knows the whole: under `dynamic` a rank learns only of the chunks it claimed. The
worker sees every rank's events, so it counts here: chunks done before this run (resume) plus
each chunk a rank finished in it, over the chunk count. A re-sent event (a rank's Redis
reconnected) names a chunk already counted, so it counts once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MapProgress:
    def __init__(self) -> None:
        self.total: int | None = None
        self._done_before = 0
        self._finished: set[int] = set()

    def feed(self, kind: str, data: Mapping[str, Any]) -> tuple[int, int] | None:
        """(chunks done, chunks in all) after this event, or None for another kind of event."""
        if kind == "map_start":
            # Every rank sends one, with the same figures: all read the output before any wrote.
            self.total = int(data["num_chunks"])
            self._done_before = int(data["chunks_done"])
        elif kind == "map_chunk":
            self._finished.add(int(data["chunk"]))
        else:
            return None
        if self.total is None:
            return None
        return min(self.total, self._done_before + len(self._finished)), self.total
