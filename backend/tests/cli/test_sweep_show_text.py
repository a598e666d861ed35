"""How `gpudeck sweep show` words a sweep: values to 3 significant figures, a waiting member's
expected start, and the analysis (best member, trend, the edge callout)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console

from gpudeck.cli.sweeps import analysis_lines, members_table, short


def _render(renderable: Any) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def _member(index: int, status: str, queue: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "index": index, "job_id": 10 + index, "params": {"lr": 0.0032802640616790657, "k": 8},
        "status": status, "progress": {"step": 5, "total": 10}, "queue": queue,
        "metrics": {"explained_variance": 0.91234} if status == "running" else {},
    }  # fmt: skip


def test_values_read_to_3_significant_figures_and_waiting_members_say_when_they_start() -> None:
    soon = (datetime.now(UTC) + timedelta(minutes=12)).isoformat()
    queue = {"expected_start_at": soon, "expected_start_from_time_limits": False}
    text = _render(
        members_table([_member(0, "running"), _member(1, "queued", queue)], ["explained_variance"])
    )
    assert "0.00328" in text and "0.0032802" not in text
    assert "expected start" in text and "in ~12 min" in text
    assert "0.9123" in text
    assert (short(8), short(None), short(1e-4)) == ("8", "", "0.0001")


def test_the_analysis_names_the_best_member_and_calls_out_the_edge() -> None:
    answer = {
        "metric": "explained_variance", "better": "max", "measured": 4, "running": 0,
        "best_job_id": 13, "best_index": 3, "best_value": 0.9512,
        "importance": "|Spearman rank correlation| ...",
        "parameters": [{
            "path": "lr", "best_value": 0.1, "rank_correlation": 0.8,
            "note": "lr best at the top of the range searched (...): widen it upward",
        }],
    }  # fmt: skip
    lines = analysis_lines(answer)
    assert lines[0] == (
        "best explained_variance (highest is best): member #3 (job 13) at 0.9512, of 4 measured"
    )
    assert lines[1] == "  lr: best at 0.1, rank correlation +0.80"
    assert "widen it upward" in lines[2]
    assert analysis_lines({**answer, "best_job_id": None}) == [
        "explained_variance: no member measured yet"
    ]
