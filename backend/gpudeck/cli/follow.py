"""Following a job until it ends: a progress bar from its progress and latest metrics, and an
exit code that says how it ended (`gpudeck submit --wait`, `gpudeck logs --follow`).

On a terminal the bar redraws in place. Piped (a script, CI, `| tee`), a redrawn bar shows
nothing until its end and then only as wide as a guessed terminal: there each change of status
(a queued job's reason too) and each tenth of the steps is one whole line instead."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Column

from gpudeck.cli import map_ranks
from gpudeck.cli.http import err_console, request

POLL_S = 1.0
TERMINAL = ("succeeded", "failed", "cancelled", "lost", "timeout", "stopped_early")
# 0 only for success, so `gpudeck submit --wait && next-step` does what it says.
EXIT_CODES = {
    "succeeded": 0,
    "failed": 1,
    "cancelled": 2,
    "lost": 3,
    "timeout": 4,
    "stopped_early": 5,
}
SUMMARY_METRICS = 3
PIPED_STEPS = 10  # piped, a line at each tenth of the steps
MIN_BAR = 10  # the bar's narrowest; metrics are dropped, last first, before it gets narrower
FINAL_CHECKPOINT = "writing the final checkpoint"


def clock(seconds: float) -> str:
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def timing_text(
    job: dict[str, Any],
    now: datetime | None = None,
    *,
    step_age_s: float = 0.0,
    finishing: str = FINAL_CHECKPOINT,
) -> str:
    """Time since the job started (not since one began following it) and, while it runs with a
    measured rate, the time its steps left need: `0:04:10 elapsed, ~0:01:30 left`. The steps
    are reported with the metrics (every `metrics_every`), so the count goes on down for the
    `step_age_s` since the step shown was reported; once the rate says the steps are done, the
    job is `finishing` (its final checkpoint) and says so, rather than '~0:00:01 left' held
    for as long as the checkpoint takes."""
    started = _time(job.get("started_at"))
    if started is None:
        return ""
    end = _time(job.get("finished_at")) or now or datetime.now(UTC)
    text = f"{clock((end - started).total_seconds())} elapsed"
    progress = job["progress"]
    rate, total = progress.get("rate_per_s"), progress.get("total")
    if job["status"] == "running" and rate and total:
        left_s = (total - progress["step"]) / rate - step_age_s
        text += f", ~{clock(left_s)} left" if left_s >= 0.5 else f", {finishing}"
    return text


def fit_metrics(width: int, fixed: list[str], metrics: list[str]) -> tuple[int, str]:
    """(the bar's width, the metrics shown) for a line `width` columns wide: the status, the
    step count and the timing (`fixed`) are whole, then as many metrics as leave the bar
    MIN_BAR wide, the rest of the width going to the bar. At 100 columns rich shrank every
    column instead: 'job 123 run… 0:12:34 elapsed, ~0:00:01 l… loss=…', no bar, no steps."""
    # rich's grid puts one space between columns; one column more is kept free for the cursor
    room = width - 1 - sum(len(text) + 1 for text in fixed) - 1
    shown: list[str] = []
    for metric in metrics:
        if room - len(" ".join([*shown, metric])) - 1 < MIN_BAR:
            break
        shown.append(metric)
    text = " ".join(shown)
    return max(1, room - (len(text) + 1 if text else 0)), text


def status_text(job: dict[str, Any]) -> str:
    """The status, and why a queued job waits: `queued (devices busy: vm/1 held by job 12)`."""
    queue = job.get("queue")
    if job["status"] == "queued" and queue:
        return f"queued ({queue['reason']})"
    return str(job["status"])


class JobFollower:
    """Polls one job (and its new metric points) and draws them as one progress bar."""

    def __init__(self, url: str, job_id: int) -> None:
        self.url, self.job_id = url, job_id
        self.after_step: int | None = None
        self.latest: dict[str, Any] = {}
        self.job: dict[str, Any] = request("GET", url, f"/api/jobs/{job_id}")
        kind = request("GET", url, f"/api/kinds/{self.job['kind']}")
        self.names = [s["metric"] for s in kind["summary_metrics"]][:SUMMARY_METRICS]
        self.is_map = map_ranks.is_map_kind(kind)
        self.ranks = ""  # a map job's chunks per rank, beside the bar
        self.map_total: dict[str, Any] | None = None  # a map job's chunks, for the bar itself
        self.piped = not err_console.is_terminal
        self.finishing = FINAL_CHECKPOINT if kind["resumes_from"] == "checkpoint" else "finishing"
        self._step_seen: tuple[int, float] | None = None  # the step shown, and when it came
        self.bar = BarColumn(bar_width=MIN_BAR)
        whole = Column(no_wrap=True)  # fit_metrics makes room: nothing is cut
        self.progress = Progress(
            TextColumn(
                "job {task.fields[job]} [bold]{task.fields[status]}[/bold]", table_column=whole
            ),
            self.bar,
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TextColumn("{task.fields[timing]}", table_column=Column(no_wrap=True)),
            TextColumn("{task.fields[metrics]}", table_column=Column(no_wrap=True)),
            console=err_console,  # stdout stays for the logs
            transient=False,
            disable=self.piped,  # piped: whole lines, see say()
        )
        self.task = self.progress.add_task(
            "", total=None, job=job_id, status="", timing="", metrics=""
        )
        self.line: dict[str, Any] = {}  # what the bar shows, as _draw last worked it out
        self._said: tuple[str, int] | None = None  # piped: the last line's status and tenth

    @property
    def done(self) -> bool:
        return self.job["status"] in TERMINAL

    def poll(self) -> None:
        self.job = request("GET", self.url, f"/api/jobs/{self.job_id}")
        params = {"after_step": self.after_step} if self.after_step is not None else {}
        page = request("GET", self.url, f"/api/jobs/{self.job_id}/metrics", params=params)
        if page["items"]:
            self.latest = page["items"][-1]["metrics"]
            self.after_step = page["last_step"]
        if self.is_map and self.job["status"] != "queued":
            ranks = map_ranks.fetch(self.url, self.job_id)
            if ranks:
                self.ranks = f"{map_ranks.compact(ranks)} {map_ranks.eta_text(ranks['eta_s'])}"
                self.map_total = ranks
        self._draw()

    def _draw(self) -> None:
        shown = [
            f"{n}={self.latest[n]:.4g}"
            for n in self.names
            if isinstance(self.latest.get(n), int | float)
        ]
        progress = self.job["progress"]
        if self.map_total is not None:  # a map job counts chunks, not steps
            progress = {
                "step": self.map_total["chunks_done"],
                "total": self.map_total["num_chunks"],
            }
        now = time.monotonic()
        if self._step_seen is None or self._step_seen[0] != progress["step"]:
            self._step_seen = (progress["step"], now)
        age_s = now - self._step_seen[1]
        self.line = {
            "status": status_text(self.job),
            "step": progress["step"],
            "total": progress["total"],
            "timing": timing_text(self.job, step_age_s=age_s, finishing=self.finishing),
            "metrics": " ".join([*shown, self.ranks] if self.ranks else shown),
        }
        if not self.piped:
            self._fit([*shown, self.ranks] if self.ranks else shown)
        self.progress.update(
            self.task,
            completed=progress["step"],
            total=progress["total"],
            status=self.line["status"],
            timing=self.line["timing"],
            metrics=self.line["metrics"],
        )
        if self.piped:
            self.say()

    def _fit(self, metrics: list[str]) -> None:
        """The bar's width and the metrics that fit the terminal as wide as it is now."""
        line = self.line
        total = line["total"]
        steps = f"{line['step']}/{total}" if total else f"{line['step']}/?"
        if total:  # MofNCompleteColumn pads the count to the total's width
            steps = f"{line['step']:>{len(str(total))}}/{total}"
        head = f"job {self.job_id} {line['status']}"
        bar_width, line["metrics"] = fit_metrics(
            err_console.width, [head, steps, line["timing"]], metrics
        )
        self.bar.bar_width = bar_width

    def say(self, *, always: bool = False) -> None:
        """Piped: one whole line when the status changed or the steps passed a tenth."""
        line = self.line
        total = line["total"] or 0
        tenth = line["step"] * PIPED_STEPS // total if total else 0
        if not always and self._said == (line["status"], tenth):
            return
        self._said = (line["status"], tenth)
        steps = f"{line['step']}/{total}" if total else ""
        parts = [f"job {self.job_id} {line['status']}", steps, line["timing"], line["metrics"]]
        err_console.print(" ".join(p for p in parts if p), markup=False, highlight=False)

    def poll_until_done(self, stop: threading.Event | None = None) -> None:
        self.poll()
        while not self.done and not (stop and stop.is_set()):
            (stop or threading.Event()).wait(POLL_S)
            self.poll()

    def finish(self) -> None:
        """Say how the job ended and exit with its code (0 only when it succeeded)."""
        status = self.job["status"]
        if self.piped and self.line and self._said != (self.line["status"], PIPED_STEPS):
            self.say(always=True)  # the last figures, whole, before the verdict
        if status == "succeeded":
            err_console.print(f"job {self.job_id} succeeded")
        else:
            cause = self.job.get("error_summary")
            err_console.print(
                f"[red]job {self.job_id} {status}[/red]" + (f": {cause}" if cause else "")
            )
        raise typer.Exit(EXIT_CODES.get(status, 1))


def wait_for(url: str, job_id: int) -> None:
    """Draw the job's progress until it ends, then exit with its status."""
    follower = JobFollower(url, job_id)
    with follower.progress:
        follower.poll_until_done()
    follower.finish()
