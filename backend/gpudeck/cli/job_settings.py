"""A job's settings in `gpudeck show` (every config field, defaults marked, what a share of
the run comes to, a sweep member's parameters against its base) and `gpudeck diff JOB JOB...`:
exactly the config fields that differ (GET /api/jobs/{id}/settings, GET /api/jobs/diff)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from gpudeck.cli.http import JsonOption, UrlOption, console, default_url, request, table

MAX_JOBS = 20  # GET /api/jobs/diff takes this many


def value_text(value: Any) -> str:
    """A config value as the job page shows it: numbers to 6 significant figures, None as
    "empty" (the kind's default decides), lists and objects as JSON."""
    if value is None:
        return "empty"
    if isinstance(value, int):  # bools too: true, false
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return value if isinstance(value, str) else json.dumps(value)


def setting_rows(settings: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, value and what it comes to, default mark) per field, in the kind's order."""
    rows = []
    for s in settings["settings"]:
        shown = value_text(s["value"]) + (f" → {s['note']}" if s["note"] else "")
        if s["is_default"]:
            mark = "(default)"
        elif s["has_default"]:
            mark = f"default {value_text(s['default'])}"
        else:
            mark = "required"
        rows.append((s["path"], shown, mark))
    return rows


def sweep_line(settings: dict[str, Any]) -> str | None:
    """ "member of sweep #2: k 3 (base 5), lr 0.01 (base 0.004)"; None outside a sweep."""
    if settings["sweep_id"] is None:
        return None
    parts = [
        f"{d['path']} {value_text(d['value'])} (base {value_text(d['base'])})"
        for d in settings["sweep_differences"]
    ]
    return f"member of sweep #{settings['sweep_id']}: " + (", ".join(parts) or "as its base")


def print_settings(url: str, job_id: int) -> None:
    """The settings block of `gpudeck show`: changed fields in bold, defaults dim."""
    settings = request("GET", url, f"/api/jobs/{job_id}/settings")
    changed = sum(1 for s in settings["settings"] if not s["is_default"])
    console.print(
        f"\nsettings ({changed} of {len(settings['settings'])} differ from the"
        f" {settings['kind']} defaults)",
        style="bold",
        highlight=False,
    )
    line = sweep_line(settings)
    if line:
        console.print("  " + escape(line), highlight=False)
    out = Table(show_header=False, box=None, padding=(0, 1, 0, 2))
    out.add_column(overflow="fold")
    out.add_column(overflow="fold")
    out.add_column(overflow="fold")
    for path, shown, mark in setting_rows(settings):
        style = "dim" if mark == "(default)" else "bold"
        out.add_row(escape(path), escape(shown), escape(mark), style=style)
    console.print(out, highlight=False)


def diff_rows(answer: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each differing field with one shown value per job ("-" where its config lacks it)."""
    return [
        (
            f["path"],
            [value_text(v) if p else "-" for v, p in zip(f["values"], f["present"], strict=True)],
        )
        for f in answer["fields"]
    ]


def diff(
    job_ids: Annotated[list[int], typer.Argument(min=1, help="two or more job ids")],
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """The config fields where the jobs differ, one column per job in the order named (any
    kinds, in sweeps or not); fields they all set alike are only counted."""
    if not 2 <= len(job_ids) <= MAX_JOBS:
        raise typer.BadParameter(f"give 2 to {MAX_JOBS} job ids", param_hint="JOB_IDS")
    answer = request("GET", url or default_url(), "/api/jobs/diff", params={"jobs": job_ids})
    if as_json:
        print(json.dumps(answer, indent=2))
        return
    rows = diff_rows(answer)
    if rows:
        out = table("field", *(f"#{i}" for i in answer["job_ids"]))
        for path, values in rows:
            out.add_row(escape(path), *(escape(v) for v in values))
        console.print(out, highlight=False)
    kinds = set(answer["kinds"])
    mixed = f" (kinds: {', '.join(answer['kinds'])})" if len(kinds) > 1 else ""
    differ = (
        f"{len(rows)} field{'' if len(rows) == 1 else 's'} differ" if rows else "no field differs"
    )
    console.print(f"{differ}; {answer['same_count']} the same{mixed}", highlight=False)
