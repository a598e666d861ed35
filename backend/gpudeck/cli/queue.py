"""Queue commands: `gpudeck queue`, `hold`, `release`, `priority` (the scheduler's rules are in
docs/scheduler.md)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from gpudeck.cli.http import JsonOption, UrlOption, console, default_url, request
from gpudeck.cli.scheduling import start_of


def devices_text(job: dict[str, Any]) -> str:
    """A waiting job's devices: those it holds, else how many it needs (the API does not say
    which devices an explicit request waits for; its reason names them)."""
    if job["devices"]:
        return ",".join(str(d["index"]) for d in job["devices"])
    n = job["world_size"]
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def queue(
    owner: Annotated[str | None, typer.Option(help="only this user's jobs")] = None,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """List waiting jobs in the order they will start, with why each waits."""
    params = {"owner": owner} if owner else {}
    page = request("GET", url or default_url(), "/api/queue", params=params)
    if as_json:
        print(json.dumps(page, indent=2))
        return
    if not page["items"]:
        console.print("no job is waiting")
        return
    table = Table(pad_edge=False, box=None, header_style="bold")
    # Narrow columns never wrap; name and reason share what is left of the terminal and fold
    # (name) or wrap at words (reason) rather than end in "…" (issue 18: names cut at 80 cols).
    for title in ("pos", "id"):
        table.add_column(title, justify="right", no_wrap=True)
    table.add_column("name", overflow="fold", ratio=2, min_width=8)
    table.add_column("owner", overflow="fold", max_width=12)
    table.add_column("prio", justify="right", no_wrap=True)
    table.add_column("devices", no_wrap=True)
    table.add_column("reason", ratio=3, min_width=12)
    table.add_column("starts", no_wrap=True)
    for job in page["items"]:
        info = job.get("queue") or {}
        table.add_row(
            str(info.get("position", "")), str(job["id"]), job["name"] or job["kind"],
            job["owner"], str(job["priority"]), devices_text(job), info.get("reason", ""),
            start_of(info),
        )  # fmt: skip
    console.print(table)
    console.print(f"{page['total']} waiting")


def _act(job_id: int, action: str, url: str, as_json: bool) -> None:
    job = request("POST", url or default_url(), f"/api/jobs/{job_id}/{action}")
    if as_json:
        print(json.dumps(job, indent=2))
        return
    info = job.get("queue")
    where = f" (position {info['position']}: {info['reason']})" if info else ""
    console.print(f"job {job['id']} {'held' if job['held'] else 'released'}{where}")


JobArg = Annotated[int, typer.Argument(min=1, help="the job's id")]


def hold(job_id: JobArg, url: UrlOption = "", as_json: JsonOption = False) -> None:
    """Keep a queued job waiting until it is released."""
    _act(job_id, "hold", url, as_json)


def release(job_id: JobArg, url: UrlOption = "", as_json: JsonOption = False) -> None:
    """Let a held job take its place in the queue again."""
    _act(job_id, "release", url, as_json)


def priority(
    job_id: JobArg,
    value: Annotated[int, typer.Argument(help="-100 to 100; users may only lower their own")],
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Set a job's priority (higher starts first)."""
    job = request("PATCH", url or default_url(), f"/api/jobs/{job_id}", json={"priority": value})
    if as_json:
        print(json.dumps(job, indent=2))
        return
    console.print(f"job {job['id']} priority {job['priority']}")


def register(app: typer.Typer) -> None:
    for command in (queue, hold, release):
        app.command()(command)
    # "-5" must reach the argument, not be taken for an unknown option
    app.command(context_settings={"ignore_unknown_options": True})(priority)
