"""A map job's total progress is counted by the worker from every rank's chunk events."""

from __future__ import annotations

from gpudeck.worker.map_progress import MapProgress


def test_chunks_from_every_rank_count_towards_one_total() -> None:
    progress = MapProgress()
    start = {"num_items": 30, "num_chunks": 8, "chunks_done": 0}
    assert progress.feed("map_start", start) == (0, 8)
    assert progress.feed("map_start", start) == (0, 8)  # rank 1's start changes nothing
    assert progress.feed("map_chunk", {"chunk": 0}) == (1, 8)
    assert progress.feed("map_chunk", {"chunk": 5}) == (2, 8)  # another rank's chunk
    assert progress.feed("map_chunk", {"chunk": 5}) == (2, 8)  # re-sent: counted once
    assert progress.feed("metrics", {"step": 1}) is None


def test_a_resumed_map_job_starts_from_the_chunks_already_written() -> None:
    progress = MapProgress()
    assert progress.feed("map_start", {"num_chunks": 5, "chunks_done": 3}) == (3, 5)
    assert progress.feed("map_chunk", {"chunk": 1}) == (4, 5)
    assert progress.feed("map_chunk", {"chunk": 3}) == (5, 5)


def test_a_chunk_event_before_the_start_event_is_kept_for_later() -> None:
    progress = MapProgress()
    assert progress.feed("map_chunk", {"chunk": 2}) is None
    assert progress.feed("map_start", {"num_chunks": 4, "chunks_done": 0}) == (1, 4)
