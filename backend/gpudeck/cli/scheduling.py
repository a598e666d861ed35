"""What the CLI says about scheduling: the submit options that ask for it (`--priority`,
`--time-limit 2h`, ...), and how a waiting job's place and expected start read in a terminal."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+)([smhd]?)")


def parse_duration(text: str) -> int:
    """`90s`, `30m`, `2h`, `1d` or plain seconds -> seconds; a ValueError says what is wrong."""
    match = _DURATION.fullmatch(text.strip().lower())
    if not match:
        raise ValueError(f"{text!r} is not a duration: use e.g. 90s, 30m, 2h or 1d")
    seconds = int(match[1]) * _UNITS_S[match[2] or "s"]
    if seconds < 1:
        raise ValueError("a time limit is at least 1 second")
    return seconds


def _duration_option(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


# The submit options, declared once here so `gpudeck submit`'s signature stays readable.
NoQueueOption = Annotated[
    bool, typer.Option("--no-queue", help="fail at once (409) if the devices are busy")
]
PriorityOption = Annotated[
    int | None, typer.Option(help="-100 to 100 (higher starts first); users may submit <= 0")
]
TimeLimitOption = Annotated[
    int | None,
    typer.Option(
        parser=_duration_option,
        metavar="DURATION",
        help="stop the job after this long, e.g. 90s, 30m, 2h, 1d (default: the server's)",
    ),
]
DependsOnOption = Annotated[
    list[int] | None,
    typer.Option(help="start only after this job succeeded (repeatable)", min=1),
]
PreemptibleOption = Annotated[
    bool,
    typer.Option(
        "--preemptible", help="may be stopped (with a checkpoint) for a higher-priority job"
    ),
]
HoldOption = Annotated[bool, typer.Option("--hold", help="submit held: waits until released")]


def scheduling_body(
    *,
    no_queue: bool,
    priority: int | None,
    time_limit_s: int | None,
    depends_on: list[int] | None,
    preemptible: bool,
    hold: bool,
) -> dict[str, Any]:
    """The scheduling fields of a submit body: only what the user set, so the API's defaults
    (queue, priority 0, the configured time limit) stay the API's to choose."""
    body: dict[str, Any] = {}
    if no_queue:
        body["queue"] = False
    if priority is not None:
        body["priority"] = priority
    if time_limit_s is not None:
        body["time_limit_s"] = time_limit_s
    if depends_on:
        body["depends_on"] = depends_on
    if preemptible:
        body["preemptible"] = True
    if hold:
        body["hold"] = True
    return body


def relative_start(
    iso: str | None, now: datetime | None = None, *, from_time_limits: bool = False
) -> str:
    """An expected start as a person reads it: `now`, `in ~12 min`, `in ~3 h`, or `unknown`;
    `within ~3 h` when a job ahead is counted for its whole time limit (no measured rate yet:
    it likely starts sooner)."""
    if not iso:
        return "unknown"
    seconds = (datetime.fromisoformat(iso) - (now or datetime.now(UTC))).total_seconds()
    if seconds < 30:
        return "now"
    word = "within" if from_time_limits else "in"
    if seconds < 5400:
        return f"{word} ~{max(1, round(seconds / 60))} min"
    if seconds < 172800:
        return f"{word} ~{round(seconds / 3600)} h"
    return f"{word} ~{round(seconds / 86400)} d"


def start_of(info: dict[str, Any]) -> str:
    """A waiting job's expected start from its `queue` info, as relative_start says it."""
    bound = bool(info.get("expected_start_from_time_limits"))
    return relative_start(info.get("expected_start_at"), from_time_limits=bound)


def describe_submitted(job: dict[str, Any]) -> str:
    """One line for a job just submitted: where it runs, or why and where it waits."""
    info = job.get("queue")
    if job["status"] == "queued" and info:
        start = start_of(info)
        return (
            f"job [bold]{job['id']}[/bold] queued at position {info['position']}: "
            f"{info['reason']} (expected start: {start})"
        )
    if not job["devices"]:  # placed between the answer and the read: it starts shortly
        return f"job [bold]{job['id']}[/bold] {job['status']}"
    devices = ", ".join(str(d["index"]) for d in job["devices"])
    # Placed on its devices, its worker not yet started: it starts now, it does not queue.
    status = "starting" if job["status"] == "queued" else job["status"]
    return f"job [bold]{job['id']}[/bold] {status} on {job['node']} devices {devices}"
