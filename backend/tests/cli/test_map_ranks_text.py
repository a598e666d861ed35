"""How `gpudeck show` and the follow line draw a map job's ranks."""

from __future__ import annotations

from gpudeck.cli.map_ranks import compact, eta_text, is_map_kind, rank_lines, total_line

PROGRESS = {
    "num_chunks": 12,
    "chunks_done_before": 2,
    "strategy": "balanced",
    "ranks": [
        {"rank": 0, "chunks_done": 3, "chunks_total": 6, "items_done": 48, "items_per_s": 12.5},
        {"rank": 1, "chunks_done": 4, "chunks_total": None, "items_done": 64, "items_per_s": 20},
    ],
    "num_items": 192,
    "chunks_done": 9,
    "items_done": 112,
    "items_per_s": 32.5,
    "eta_s": 150.0,
}


def test_each_rank_gets_a_bar_of_its_share_and_dynamic_ones_of_the_run() -> None:
    first, second = rank_lines(PROGRESS)
    assert first == "rank 0  " + "#" * 10 + "." * 10 + "  3/6 chunks  48 items  12.5 items/s"
    assert second.startswith("rank 1  " + "#" * 8 + "." * 12 + "  4/10 chunks")  # 12 - 2 left
    assert compact(PROGRESS) == "r0 3/6 r1 4/10"
    before_start = {**PROGRESS, "num_chunks": None, "ranks": [{**PROGRESS["ranks"][1]}]}
    assert compact(before_start) == "r1 4/?"


def test_the_total_line_counts_every_chunk_and_says_when_the_job_ends() -> None:
    assert total_line(PROGRESS) == (
        "total   " + "#" * 15 + "." * 5 + "  9/12 chunks  112 items  32.5 items/s  ETA 2 min"
    )
    assert [eta_text(s) for s in (None, 0.4, 89, 150, 5400)] == [
        "ETA ?", "ETA 0 s", "ETA 89 s", "ETA 2 min", "ETA 1.5 h"
    ]  # fmt: skip


def test_only_kinds_that_resume_from_their_output_are_map_kinds() -> None:
    assert is_map_kind({"resumes_from": "output"})
    assert not is_map_kind({"resumes_from": "checkpoint"}) and not is_map_kind({})
