"""`gpudeck sweep submit|show|set|cancel` and `gpudeck sweeps`: many jobs from one spec, over HTTP
(docs/sweeps.md)."""

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
from gpudeck.cli.scheduling import start_of
from gpudeck.cli.share_lines import ShareOption, share_body
from gpudeck.cli.slurm_lines import ClusterOption, PartitionOption
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
    cluster: ClusterOption = None,
    partition: PartitionOption = None,
    nodes: Annotated[
        int | None, typer.Option(min=1, help="with --cluster: each member spans this many nodes")
    ] = None,
    max_parallel: Annotated[
        int | None, typer.Option(min=1, help="at most this many members run at once")
    ] = None,
    share: ShareOption = False,
    name: Annotated[str | None, typer.Option(help="the sweep's name")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="follow it until every member ends")] = False,
    preview: Annotated[
        bool,
        typer.Option("--preview", help="print each member's values (the draws) and submit nothing"),
    ] = False,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Submit a sweep: a base job and the config values to vary (dotted paths for nested
    fields; values read as JSON), e.g.
    `gpudeck sweep submit sae --grid k=8,16,32 --grid lr=1e-3,4e-3 --max-parallel 2 --wait`,
    `--zip d_in=16,32 --zip d_sae=64,128` (d_in and d_sae in step), or
    `--random lr=log_uniform:1e-4:1e-2 --random k=int:4:64 --draws 8 --seed 1`.
    With --cluster lab its members run on that Slurm cluster."""
    base = read_config(config)
    job = {"kind": kind, "config": base, "count": count}
    # where each member runs (--cluster): checked by the API, a 422 naming the field
    place = {"cluster": cluster, "partition": partition, "nodes": nodes}
    job |= {k: v for k, v in place.items() if v}
    job |= share_body(share)  # each member shares: as many per device as their reservations fit
    body: dict[str, Any] = {
        "job": job,
        "parameters": parameters(grid or [], zip_ or [], random or [], draws, seed),
    }
    if max_parallel is not None:
        body["max_parallel"] = max_parallel
    if name:
        body["name"] = name
    url = url or default_url()
    if preview:
        drawn = request("POST", url, "/api/sweeps/draws", json=body["parameters"])
        if as_json:
            print(json.dumps(drawn, indent=2))
            return
        paths = list(dict.fromkeys(p for m in drawn["members"] for p in m))
        listing = table("#", *paths)
        for i, values in enumerate(drawn["members"]):
            listing.add_row(str(i), *(short(values.get(p)) for p in paths))
        console.print(f"{drawn['count']} members (nothing submitted):")
        console.print(listing)
        return
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
    """A bar of the members ended, then their results (as `sweep show` prints them); exit 0
    when every one succeeded."""
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
    _print_results(url, sweep, _analysis(url, sweep, None))  # what the wait was for
    return 1 if failed else 0


@sweep_app.command()
def show(
    sweep_id: SweepArg,
    metric: Annotated[
        str | None,
        typer.Option(
            help="the metric read against each parameter (default: held-out explained variance)"
        ),
    ] = None,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """The members: their values (3 significant figures), status, expected start while waiting
    and the kind's summary metrics; then the metric against each swept parameter: the best
    member, each parameter's rank correlation with it, and a best at the edge of the range."""
    base = url or default_url()
    sweep = request("GET", base, f"/api/sweeps/{sweep_id}")
    answer = _analysis(base, sweep, metric)
    if as_json:
        print(json.dumps({**sweep, "analysis": answer}, indent=2))
        return
    console.print(f"sweep {sweep['id']} {sweep['name']} ({sweep['kind']}, {sweep['owner']})")
    _print_results(base, sweep, answer)


def _analysis(url: str, sweep: dict[str, Any], metric: str | None) -> dict[str, Any] | None:
    """GET .../analysis, once a member reported a figure (or a metric is named)."""
    if not metric and not any(m["metrics"] for m in sweep["members"]):
        return None
    query = {"metric": metric} if metric else {}
    answer: dict[str, Any] = request(
        "GET", url, f"/api/sweeps/{sweep['id']}/analysis", params=query
    )
    return answer


def _print_results(url: str, sweep: dict[str, Any], answer: dict[str, Any] | None) -> None:
    """The members' table (the kind's summary metrics in its order) and the analysis lines."""
    members = sweep["members"]
    kind = request("GET", url, f"/api/kinds/{sweep['kind']}")
    summary = [s["metric"] for s in kind.get("summary_metrics", [])]
    metrics = [k for k in summary if any(k in m["metrics"] for m in members)][:5]
    console.print(members_table(members, metrics))
    for line in analysis_lines(answer) if answer is not None else []:
        console.print(line)


def short(value: Any) -> str:
    """A value as the page shows it: numbers to 3 significant figures (lr 0.00328, not
    0.0032802640616790657), whole numbers whole."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else str(value)


def members_table(members: list[dict[str, Any]], metrics: list[str]) -> Any:
    paths = list(dict.fromkeys(p for m in members for p in m["params"]))
    waiting = any(m.get("queue") for m in members)
    extra = ("expected start",) if waiting else ()
    listing = table("#", "job", *paths, "status", "progress", *extra, *metrics)
    for m in members:
        total = m["progress"]["total"]
        progress = f"{m['progress']['step']}/{total}" if total else str(m["progress"]["step"])
        start = (start_of(m["queue"]) if m.get("queue") else "",) if waiting else ()
        listing.add_row(
            str(m["index"]), str(m["job_id"]), *(short(m["params"].get(p)) for p in paths),
            m["status"], progress, *start,
            *(f"{m['metrics'][k]:.4g}" if k in m["metrics"] else "-" for k in metrics),
        )  # fmt: skip
    return listing


def analysis_lines(answer: dict[str, Any]) -> list[str]:
    """The analysis as the page words it: the best member, each parameter's trend, the
    edge callouts."""
    if answer["best_job_id"] is None:
        return [f"{answer['metric']}: no member measured yet"]
    way = "highest" if answer["better"] == "max" else "lowest"
    running = f", {answer['running']} still running" if answer["running"] else ""
    lines = [
        f"best {answer['metric']} ({way} is best): member #{answer['best_index']} "
        f"(job {answer['best_job_id']}) at {answer['best_value']:.4g}, of "
        f"{answer['measured']} measured{running}"
    ]
    for p in answer["parameters"]:
        rho = p["rank_correlation"]
        trend = f"rank correlation {rho:+.2f}" if rho is not None else "no trend measured"
        lines.append(f"  {p['path']}: best at {short(p['best_value'])}, {trend}")
        if p["note"]:
            lines.append(f"  [yellow]{p['note']}[/yellow]")
    lines.append(f"[dim]importance: {answer['importance']}[/dim]")
    return lines


@sweep_app.command()
def resume(sweep_id: SweepArg, url: UrlOption = "") -> None:
    """Run again every member that failed or was cancelled, from its newest checkpoint."""
    sweep = request("POST", url or default_url(), f"/api/sweeps/{sweep_id}/resume")
    state = ", ".join(f"{n} {s}" for s, n in sorted(sweep["counts"].items()))
    console.print(f"sweep {sweep_id}: {state}")


@sweep_app.command("set")
def set_(
    sweep_id: SweepArg,
    max_parallel: Annotated[
        int,
        # no bounds here: the API's (1..1024) refuse a bad value with its own words
        typer.Option("--max-parallel", help="at most this many members run at once, from now on"),
    ],
    url: UrlOption = "",
) -> None:
    """Change a sweep while it runs: raised, the next scheduling pass starts more members (on a
    Slurm cluster, its arrays' throttle is set); lowered, no running member is stopped."""
    body = {"max_parallel": max_parallel}
    sweep = request("PATCH", url or default_url(), f"/api/sweeps/{sweep_id}", json=body)
    console.print(
        f"sweep {sweep_id}: max_parallel {sweep['max_parallel']} (at most "
        f"{sweep['max_parallel']} members at once); more start at the next pass, "
        "lowering it stops no running member"
    )


@sweep_app.command()
def cancel(sweep_id: SweepArg, url: UrlOption = "") -> None:
    """Cancel every member not yet ended (a running one stops after its final checkpoint)."""
    sweep = request("POST", url or default_url(), f"/api/sweeps/{sweep_id}/cancel")
    state = ", ".join(f"{n} {s}" for s, n in sorted(sweep["counts"].items()))
    console.print(
        f"sweep {sweep_id}: {sweep['cancelled']} waiting members cancelled, "
        f"{sweep['stopping']} running asked to stop after a final checkpoint ({state})"
    )


def sweeps(
    limit: Annotated[int, typer.Option(min=1, max=500, help="the newest N sweeps")] = 50,
    as_json: JsonOption = False,
    url: UrlOption = "",
) -> None:
    """The newest sweeps: what each swept (values or range), its kind and its members by status."""
    listed = request("GET", url or default_url(), "/api/sweeps", params={"limit": limit})
    if as_json:
        print(json.dumps(listed, indent=2))
        return
    rows = table("id", "name", "kind", "swept", "members", "owner")
    for sweep in listed:
        counts = sweep["counts"]
        members = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        swept = "\n".join(p["text"] for p in sweep["swept"]) or "-"
        rows.add_row(
            str(sweep["id"]), sweep["name"], sweep["kind"], swept, members or "-", sweep["owner"]
        )
    console.print(rows)


def register(app: typer.Typer) -> None:
    app.add_typer(sweep_app, name="sweep")
    app.command()(sweeps)
