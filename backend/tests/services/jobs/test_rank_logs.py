"""The stored copy's cap and its reading, as values (no database)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpudeck.services.jobs.rank_logs import Cap, Chunk, Reader


@given(st.lists(st.integers(min_value=0, max_value=5000), max_size=60))
def test_the_cap_keeps_the_head_and_the_newest_chunk_and_fits_otherwise(sizes: list[int]) -> None:
    cap = Cap(cap_bytes=8192)
    kept: dict[int, int] = {}
    head: list[int] = []
    for seq, size in enumerate(sizes):
        tail_before = len(cap.tail)
        cap.add(seq, size)
        if len(cap.tail) == tail_before:
            head.append(seq)
        kept[seq] = size
        doomed = cap.to_evict()
        cap.evicted(len(doomed))
        for gone in doomed:
            del kept[gone]
    assert cap.stored_bytes == sum(kept.values())
    assert cap.head_bytes <= cap.head_limit
    if sizes:
        assert len(sizes) - 1 in kept  # the newest output is always there
        assert cap.stored_bytes <= cap.cap_bytes or len(cap.tail) == 1
    assert all(seq in kept for seq in head)  # the start of the log is never dropped


def test_a_gap_on_one_node_becomes_a_line_and_another_node_starts_afresh() -> None:
    reader = Reader(job_id=7, rank=2)
    text = reader.feed(
        [
            Chunk(0, "node-b", 0, b"first\n"),
            Chunk(1, "node-b", 2054, b"much later\n"),  # 2048 bytes were dropped
            Chunk(2, "node-c", 0, b"run again elsewhere\n", final=True),
        ]
    ).decode()
    lines = text.splitlines()
    assert lines[0] == "first" and lines[2:] == ["much later", "run again elsewhere"]
    assert lines[1].startswith("[gpudeck: 2.0 KiB of this rank's output were not kept")
    assert lines[1].endswith("the whole log is jobs/7/rank2.log on node node-b]")
    assert reader.ended and reader.last_seq == 2
