"""`gpudeck tag JOB [TAG...]`: a job's tags and notes, as the dashboard's jobs list shows and
filters them (PATCH /api/jobs/{id}/labels)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from gpudeck.cli.http import JsonOption, UrlOption, console, default_url, request


def tag(
    job_id: Annotated[int, typer.Argument(min=1, help="the job's id")],
    tags: Annotated[list[str] | None, typer.Argument(help="tags to add")] = None,
    remove: Annotated[
        list[str] | None, typer.Option("--remove", "-r", help="a tag to take off (repeatable)")
    ] = None,
    note: Annotated[
        str | None, typer.Option("--note", help="the job's notes (replaces them; '' clears)")
    ] = None,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Tag a job (`gpudeck tag 12 baseline`), take tags off (--remove), write its notes
    (--note); with none of these, print its tags and notes. Find tagged jobs with
    `gpudeck jobs --tag baseline`."""
    base = url or default_url()
    if tags or remove or note is not None:
        body: dict[str, Any] = {"add_tags": tags or [], "remove_tags": remove or []}
        if note is not None:
            body["notes"] = note
        job = request("PATCH", base, f"/api/jobs/{job_id}/labels", json=body)
    else:
        job = request("GET", base, f"/api/jobs/{job_id}")
    if as_json:
        print(json.dumps({"id": job["id"], "tags": job["tags"], "notes": job["notes"]}, indent=2))
        return
    console.print(f"job {job['id']} tags: {', '.join(job['tags']) or '-'}", highlight=False)
    if job["notes"]:
        console.print(f"notes: {job['notes']}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command()(tag)
