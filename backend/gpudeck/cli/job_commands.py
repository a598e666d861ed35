"""`gpudeck show JOB`, `logs JOB`, `checkpoints JOB`, `resume JOB` and `diff JOB JOB...`: one
job (or where several differ), over HTTP."""

from __future__ import annotations

import json
import sys
import threading
from datetime import datetime
from typing import Annotated, Any

import httpx
import typer
from rich.table import Table

from gpudeck.cli import job_settings, map_ranks
from gpudeck.cli.follow import JobFollower, wait_for
from gpudeck.cli.http import (
    JsonOption,
    UrlOption,
    auth_headers,
    console,
    default_url,
    err_console,
    exit_for_response,
    gib,
    request,
    size,
    tls,
)
from gpudeck.cli.job_figures import bar_lines, figure_rows, latest_values
from gpudeck.cli.scheduling import describe_submitted
from gpudeck.cli.share_lines import share_row
from gpudeck.cli.slurm_lines import cluster_place, slurm_rows

FIGURE_STEPS = 10_000  # `show` reads the metrics of this many last steps for the figures
JobArg = Annotated[int, typer.Argument(min=1, help="the job's id")]


def _elapsed(job: dict[str, Any]) -> str:
    if not job["started_at"]:
        return "-"
    start = datetime.fromisoformat(job["started_at"])
    end = datetime.fromisoformat(job["finished_at"]) if job["finished_at"] else None
    seconds = int(((end or datetime.now(start.tzinfo)) - start).total_seconds())
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def show(job_id: JobArg, url: UrlOption = "", as_json: JsonOption = False) -> None:
    """Everything about one job: devices, progress, times, memory (estimate and measured peak),
    its settings (every config field, defaults marked) and why it ended."""
    job = request("GET", url or default_url(), f"/api/jobs/{job_id}")
    if as_json:
        print(json.dumps(job, indent=2))
        return
    total = job["progress"]["total"]
    devices = ", ".join(str(d["index"]) for d in job["devices"])
    where = cluster_place(job) or f"{job['node']}: {devices or '-'}"
    rows = [
        ("job", f"{job['id']} {job['name']}"),
        ("kind", job["kind"]),
        ("status", job["status"]),
        ("owner", job["owner"]),
        ("devices", f"{where} ({job['world_size']} ranks)"),
        (
            "progress",
            f"{job['progress']['step']}/{total}" if total else str(job["progress"]["step"]),
        ),
        ("created", job["created_at"][:19].replace("T", " ")),
        ("started", (job["started_at"] or "-")[:19].replace("T", " ")),
        ("finished", (job["finished_at"] or "-")[:19].replace("T", " ")),
        ("elapsed", _elapsed(job)),
        share_row(job),
        ("estimate / device", gib(job["estimate_bytes_per_device"])),
        ("peak / device", gib(job["peak_memory_bytes"])),
    ]
    rows += slurm_rows(job)
    rows += _memory_rows(job)
    kind = request("GET", url or default_url(), f"/api/kinds/{job['kind']}")
    latest = _latest(url or default_url(), job)
    rows += figure_rows(kind, latest)
    if job["resume_from_job_id"]:
        rows.append(("resumes", f"job {job['resume_from_job_id']}"))
    if job["error_summary"]:
        rows.append(("cause", f"[red]{job['error_summary']}[/red]"))
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    for chart in (c for c in kind["charts"] if c.get("style") == "bars"):
        lines = bar_lines(chart, latest)
        if lines:
            console.print("\n" + "\n".join(lines), markup=False, highlight=False)
    _show_ranks(url or default_url(), job, kind)
    job_settings.print_settings(url or default_url(), job["id"])
    if job["error"] and job["error"].strip() != job["error_summary"]:
        console.print("\n" + job["error"].rstrip(), markup=False, highlight=False)


def _latest(url: str, job: dict[str, Any]) -> dict[str, float]:
    """The newest value of each metric over the last FIGURE_STEPS steps; {} where the
    metrics are the owner's alone (or cannot be read)."""
    after = max(0, (job["progress"]["step"] or 0) - FIGURE_STEPS)
    try:
        answer = httpx.get(
            f"{url.rstrip('/')}/api/jobs/{job['id']}/metrics",
            params={"after_step": after} if after else {},
            headers=auth_headers(),
            timeout=30.0,
            verify=tls(),
        )
    except httpx.HTTPError:
        return {}
    return latest_values(answer.json()["items"]) if answer.status_code == 200 else {}


def _show_ranks(url: str, job: dict[str, Any], kind: dict[str, Any]) -> None:
    """A map job's ranks, one line each (nothing for other kinds)."""
    if not map_ranks.is_map_kind(kind):
        return
    progress = map_ranks.fetch(url, job["id"])
    if progress and progress["ranks"]:
        console.print(f"\nranks ({progress['strategy']})", style="bold")
        for line in [*map_ranks.rank_lines(progress), map_ranks.total_line(progress)]:
            console.print("  " + line, markup=False, highlight=False)


def _memory_rows(job: dict[str, Any]) -> list[tuple[str, str]]:
    """Each rank's peak host memory and the job's limit (script jobs), its peak device memory
    (NVML), then the advice."""
    rows = []
    memory = job.get("rank_memory")
    if memory:
        if memory.get("host_limit_bytes") is not None:
            exceeded = " [red](exceeded)[/red]" if memory.get("exceeded") else ""
            limit = size(memory["host_limit_bytes"])
            rows.append(("host memory limit", limit + exceeded))
        for r in memory.get("ranks", []):
            rows.append((f"rank {r['rank']} host peak", size(r["host_peak_rss_bytes"])))
        device = memory.get("device_peak_bytes") or {}
        for rank in sorted(device, key=int):
            rows.append((f"rank {rank} device peak", size(device[rank])))
    rows += [("advice", line) for line in job.get("advice", [])]
    return rows


def _stream_log(url: str, job_id: int, rank: int, tail: int, follow: bool) -> None:
    params: dict[str, Any] = {"rank": rank, "tail": tail, "follow": follow}
    path = f"{url.rstrip('/')}/api/jobs/{job_id}/logs"
    try:
        with httpx.stream(
            "GET",
            path,
            params=params,
            headers=auth_headers(),
            timeout=httpx.Timeout(30, read=None),
            verify=tls(),
        ) as response:
            if response.status_code >= 400:
                response.read()
                exit_for_response(response)
            for chunk in response.iter_bytes():
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
    except httpx.HTTPError as exc:
        err_console.print(f"[red]cannot reach GPUDeck at {url}[/red]: {exc}")
        raise typer.Exit(1) from None


def logs(
    job_id: JobArg,
    rank: Annotated[int, typer.Option(min=0, max=63, help="which rank's output")] = 0,
    tail: Annotated[int, typer.Option(min=0, max=100_000, help="last lines to show")] = 200,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="keep printing until the job ends")
    ] = False,
    url: UrlOption = "",
) -> None:
    """A rank's stdout and stderr. With --follow: new lines as they come, a progress bar, and
    the job's status as the exit code (0 succeeded)."""
    url = url or default_url()
    if not follow:
        _stream_log(url, job_id, rank, tail, follow=False)
        return
    follower = JobFollower(url, job_id)
    stop = threading.Event()
    poller = threading.Thread(target=follower.poll_until_done, args=(stop,), daemon=True)
    with follower.progress:
        poller.start()
        try:
            _stream_log(url, job_id, rank, tail, follow=True)  # ends when the job does
        finally:
            stop.set()
            poller.join()
    follower.poll()
    follower.finish()


def resume(
    job_id: JobArg,
    wait: Annotated[bool, typer.Option("--wait", help="follow it until it ends")] = False,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Start a new job that continues this one from its newest checkpoint."""
    url = url or default_url()
    job = request("POST", url, f"/api/jobs/{job_id}/resume", json={})
    if as_json:
        print(json.dumps(job, indent=2))
    else:
        console.print(f"{describe_submitted(job)} (resumes job {job_id})")
    if wait:
        wait_for(url, job["id"])


def checkpoints(job_id: JobArg, url: UrlOption = "", as_json: JsonOption = False) -> None:
    """A job's checkpoints, newest first: step, loss, size, files, and where they are when
    they are on another node's disk (the API cannot serve those: copy them from there)."""
    url = url or default_url()
    listed = request("GET", url, f"/api/jobs/{job_id}/checkpoints")
    if as_json:
        print(json.dumps(listed, indent=2))
        return
    if not listed:
        console.print(f"job {job_id} has no checkpoint yet")
        return
    table = Table("step", "loss", "size", "files", "download", box=None)
    for c in reversed(listed):
        loss = "-" if c["loss"] is None else f"{c['loss']:.4g}"
        where = f"{url.rstrip('/')}/api/jobs/{job_id}/checkpoints/{c['step']}/files/<file>"
        if c["location"]:
            where = f"copy from {c['location']}"
        names = ", ".join(f["name"] for f in c["files"])
        table.add_row(str(c["step"]), loss, size(c["size_bytes"]), names, where)
    console.print(table)


def register(app: typer.Typer) -> None:
    for command in (show, logs, checkpoints, resume, job_settings.diff):
        app.command()(command)
