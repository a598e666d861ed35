"""`gpudeck sweep submit|show|cancel`: many jobs from one spec, over HTTP (docs/sweeps.md)."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from gpudeck.cli.http import (
    JsonOption,
    UrlOption,
    console,
    default_url,
    err_console,
    read_config,
    request,
    table,
)
from gpudeck.cli.sweep_params import RANDOM_FORMS, parameters

sweep_app = typer.Typer(no_args_is_help=True, help="Sweeps: many jobs from one spec, compared.")
SweepArg = Annotated[int, typer.Argument(min=1, help="the sweep's id")]
ENDED = {"succeeded", "failed", "cancelled", "lost", "timeout", "stopped_early"}


@sweep_app.command()
def submit(
    kind: Annotated[str, typer.Argument(help="job kind, e.g. sae")],
    grid: Annotated[
        list[str] | None, typer.Option(help="path=v1,v2,...: every combination (repeatable)")
    ] = None,
    zip_: Annotated[
        list[str] | None,
        typer.Option(
            "--zip", help="path=v1,v2,...: advanced together with the other --zip (one length)"
        ),
    ] = None,
    random: Annotated[
        list[str] | None,
        typer.Option(help=f"{RANDOM_FORMS}: drawn --draws times, seeded (repeatable)"),
    ] = None,
    draws: Annotated[
        int | None, typer.Option(min=1, help="with --random: members drawn (per grid/zip row)")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(min=0, help="with --random: the draws' seed (default 0)")
    ] = None,
    config: Annotated[str, typer.Option(help="the base config as JSON, or @file.json")] = "{}",
    count: Annotated[int, typer.Option(min=1, max=64, help="devices per member")] = 1,
    max_parallel: Annotated[
        int | None, typer.Option(min=1, help="at most this many members run at once")
    ] = None,
    name: Annotated[str | None, typer.Option(help="the sweep's name")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="follow it until every member ends")] = False,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Submit a sweep: a base job and the config values to vary (dotted paths for nested
    fields; values read as JSON), e.g.
    `gpudeck sweep submit sae --grid k=8,16,32 --grid lr=1e-3,4e-3 --max-parallel 2 --wait`,
    `--zip d_in=16,32 --zip d_sae=64,128` (d_in and d_sae in step), or
    `--random lr=log_uniform:1e-4:1e-2 --random k=int:4:64 --draws 8 --seed 1`."""
    base = read_config(config)
    body: dict[str, Any] = {
        "job": {"kind": kind, "config": base, "count": count},
        "parameters": parameters(grid or [], zip_ or [], random or [], draws, seed),
    }
    if max_parallel is not None:
        body["max_parallel"] = max_parallel
    if name:
        body["name"] = name
    url = url or default_url()
    sweep = request("POST", url, "/api/sweeps", json=body)
    if as_json:
        print(json.dumps(sweep, indent=2))
    else:
        limit = f", at most {max_parallel} at once" if max_parallel else ""
        console.print(
            f"sweep [bold]{sweep['id']}[/bold] {sweep['name']}: "
            f"{len(sweep['members'])} members{limit}"
        )
    if wait:
        raise typer.Exit(_follow(url, sweep["id"]))


def _follow(url: str, sweep_id: int) -> int:
    """A bar of the members ended; exit 0 when every one succeeded."""
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[state]}"))
    with Progress(*columns, TimeElapsedColumn(), console=err_console, transient=False) as bar:
        task = bar.add_task(f"sweep {sweep_id}", total=None, state="")
        while True:
            sweep = request("GET", url, f"/api/sweeps/{sweep_id}")
            members = sweep["members"]
            ended = sum(1 for m in members if m["status"] in ENDED)
            state = ", ".join(f"{n} {s}" for s, n in sorted(sweep["counts"].items()))
            bar.update(task, total=len(members), completed=ended, state=state)
            if ended == len(members):
                break
            time.sleep(1.0)
    failed = [m for m in members if m["status"] != "succeeded"]
    err_console.print(f"sweep {sweep_id}: {len(members) - len(failed)} of {len(members)} succeeded")
    return 1 if failed else 0


@sweep_app.command()
def show(sweep_id: SweepArg, url: UrlOption = "", as_json: JsonOption = False) -> None:
    """The members: their values, status and newest metrics."""
    sweep = request("GET", url or default_url(), f"/api/sweeps/{sweep_id}")
    if as_json:
        print(json.dumps(sweep, indent=2))
        return
    members = sweep["members"]
    paths = list(dict.fromkeys(p for m in members for p in m["params"]))
    metrics = list(dict.fromkeys(k for m in members for k in m["metrics"]))[:4]
    listing = table("#", "job", *paths, "status", "progress", *metrics)
    for m in members:
        total = m["progress"]["total"]
        progress = f"{m['progress']['step']}/{total}" if total else str(m["progress"]["step"])
        listing.add_row(
            str(m["index"]), str(m["job_id"]), *(str(m["params"].get(p, "")) for p in paths),
            m["status"], progress, *(f"{m['metrics'][k]:.4g}" if k in m["metrics"] else "-"
                                     for k in metrics),
        )  # fmt: skip
    console.print(f"sweep {sweep['id']} {sweep['name']} ({sweep['kind']}, {sweep['owner']})")
    console.print(listing)


@sweep_app.command()
def resume(sweep_id: SweepArg, url: UrlOption = "") -> None:
    """Run again every member that failed or was cancelled, from its newest checkpoint."""
    sweep = request("POST", url or default_url(), f"/api/sweeps/{sweep_id}/resume")
    state = ", ".join(f"{n} {s}" for s, n in sorted(sweep["counts"].items()))
    console.print(f"sweep {sweep_id}: {state}")


@sweep_app.command()
def cancel(sweep_id: SweepArg, url: UrlOption = "") -> None:
    """Cancel every member not yet ended (a running one stops after its final checkpoint)."""
    sweep = request("POST", url or default_url(), f"/api/sweeps/{sweep_id}/cancel")
    state = ", ".join(f"{n} {s}" for s, n in sorted(sweep["counts"].items()))
    console.print(
        f"sweep {sweep_id}: {sweep['cancelled']} waiting members cancelled, "
        f"{sweep['stopping']} running asked to stop after a final checkpoint ({state})"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(sweep_app, name="sweep")
