"""`gpudeck compare JOB JOB...`: jobs side by side, as the dashboard's compare page shows them:
what they are, their newest summary figures, and the config fields where they differ."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.markup import escape

from gpudeck.cli.http import JsonOption, UrlOption, console, default_url, request, table

MAX_JOBS = 100  # the jobs list's id= filter takes this many


def flat(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Each leaf of a config by dotted path; lists are leaves."""
    for key, value in config.items():
        if isinstance(value, dict) and value:
            yield from flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def differing(configs: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """The fields whose values are not alike across the configs (missing counts as a value),
    each with one shown value per config, in first-seen order."""
    flats = [dict(flat(c)) for c in configs]
    paths = list(dict.fromkeys(p for f in flats for p in f))
    shown = [[json.dumps(f[p]) if p in f else "-" for f in flats] for p in paths]
    return [(p, values) for p, values in zip(paths, shown, strict=True) if len(set(values)) > 1]


def figure_rows(jobs: list[dict[str, Any]], kinds: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each kind's summary figures (the union, in the kinds' order), one value per job."""
    series = {s["metric"]: s["label"] for j in jobs for s in kinds[j["kind"]]["summary_metrics"]}
    rows = []
    for metric, label in series.items():
        values = [j["latest_metrics"].get(metric) for j in jobs]
        if any(isinstance(v, int | float) for v in values):
            rows.append((label, ["-" if v is None else f"{v:.4g}" for v in values]))
    return rows


def compare(
    job_ids: Annotated[list[int], typer.Argument(min=1, help="two or more job ids")],
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Jobs side by side (any kinds, in sweeps or not): kind, status, tags, each kind's newest
    summary figures and the config fields where they differ. The dashboard's
    /compare?jobs=3,7,12 shows the same with their curves."""
    if not 2 <= len(set(job_ids)) <= MAX_JOBS:
        raise typer.BadParameter(f"give 2 to {MAX_JOBS} different job ids", param_hint="JOB_IDS")
    base = url or default_url()
    order = list(dict.fromkeys(job_ids))
    page = request("GET", base, "/api/jobs", params={"id": order, "limit": MAX_JOBS})
    found = {j["id"]: j for j in page["items"]}
    missing = [i for i in order if i not in found]
    if missing:
        raise typer.BadParameter(f"no job {missing[0]}", param_hint="JOB_IDS")
    jobs = [found[i] for i in order]
    kinds = {k: request("GET", base, f"/api/kinds/{k}") for k in {j["kind"] for j in jobs}}
    figures = figure_rows(jobs, kinds)
    differs = differing([j["config"] for j in jobs])
    if as_json:
        print(json.dumps({"jobs": order, "figures": figures, "differing": differs}, indent=2))
        return
    out = table("", *(escape(f"#{j['id']} {j['name']}") for j in jobs))
    for label, key in (("kind", "kind"), ("status", "status")):
        out.add_row(label, *(str(j[key]) for j in jobs))
    out.add_row("tags", *(escape(" ".join(j["tags"])) or "-" for j in jobs))
    for label, values in figures:
        out.add_row(label, *values)
    for path, values in differs:
        out.add_row(f"[yellow]{escape(path)}[/yellow]", *map(escape, values))
    console.print(out)
    same = len({p for c in jobs for p, _ in flat(c["config"])}) - len(differs)
    console.print(f"{len(differs)} config fields differ, {same} alike", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(compare)
