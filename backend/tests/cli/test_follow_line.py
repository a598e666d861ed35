"""`--wait`'s line on a terminal: at 100 columns the status, the step count and the time left are
whole, the metrics that fit follow them, and the bar takes the rest; once the measured rate says
the steps are done the job is said to be writing its final checkpoint, not '~0:00:01 left'."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rich.console import Console

from gpudeck.cli import follow

STARTED = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
METRICS = {"loss": 0.012345, "mse": 0.00045678, "l0": 31.98}


def job(step: int, total: int = 15000, rate: float = 20.0) -> dict[str, Any]:
    return {
        "id": 123,
        "kind": "sae",
        "status": "running",
        "started_at": STARTED.isoformat(),
        "finished_at": None,
        "progress": {"step": step, "total": total, "rate_per_s": rate},
    }


def follower(monkeypatch: pytest.MonkeyPatch, width: int, answer: dict[str, Any]) -> Console:
    """A JobFollower's line as a terminal `width` columns wide draws it, its API answered here."""
    console = Console(width=width, force_terminal=True, record=True)
    monkeypatch.setattr(follow, "err_console", console)

    def request(method: str, url: str, path: str, **_: Any) -> dict[str, Any]:
        if path.startswith("/api/kinds/"):
            names = ["loss", "mse", "l0"]
            return {"summary_metrics": [{"metric": n} for n in names], "resumes_from": "checkpoint"}
        if path.endswith("/metrics"):
            return {"items": [{"step": 14980, "metrics": METRICS}], "last_step": 14980}
        return answer

    monkeypatch.setattr(follow, "request", request)
    followed = follow.JobFollower("http://api", 123)
    followed.poll()
    console.print(followed.progress.make_tasks_table(followed.progress.tasks))
    return console


@pytest.mark.parametrize("width", [100, 80, 140])
def test_the_line_fits_the_terminal_with_the_step_count_and_time_left_whole(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    line = follower(monkeypatch, width, job(14980)).export_text().rstrip()
    assert "\n" not in line and len(line) < width, line
    assert line.startswith("job 123 running ━"), line  # the bar is there
    assert " 14980/15000 " in line, line
    assert "elapsed, ~0:00:01 left" in line, line
    assert "…" not in line, line  # nothing cut: a metric that does not fit is left out whole
    if width >= 100:
        assert "loss=0.01235" in line, line
    if width >= 140:
        assert line.endswith("loss=0.01235 mse=0.0004568 l0=31.98"), line


def test_the_wait_says_the_final_checkpoint_once_the_steps_are_done_by_the_rate() -> None:
    now = STARTED + timedelta(seconds=750)
    running = job(14980)  # 20 steps left at 20 a second
    assert follow.timing_text(running, now).endswith("elapsed, ~0:00:01 left")
    # the last step is reported after the final save: the figure must not stay at 0:00:01
    later = follow.timing_text(running, now, step_age_s=3.0)
    assert later == "0:12:30 elapsed, writing the final checkpoint"
    done = follow.timing_text(job(15000), now)
    assert done.endswith(", writing the final checkpoint")
    output = follow.timing_text(job(14980), now, step_age_s=3.0, finishing="finishing")
    assert output.endswith(", finishing")  # a map job writes its output, not a checkpoint
