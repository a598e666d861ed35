"""Client commands: talk to a running GPUDeck API over HTTP."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from gpudeck.cli import scheduling as sched
from gpudeck.cli.cluster_board import print_cluster_nodes
from gpudeck.cli.follow import wait_for
from gpudeck.cli.follow_up import OnOutputOption, prefill
from gpudeck.cli.http import (
    JsonOption,
    UrlOption,
    console,
    default_url,
    err_console,
    gib,
    read_config,
    request,
    table,
)
from gpudeck.cli.share_lines import ShareOption, reservations_cell, share_body, sharing_mark
from gpudeck.cli.slurm_lines import ClusterOption, PartitionOption, cluster_place, submitted_line


def gpus(url: UrlOption = "", as_json: JsonOption = False) -> None:
    """List every device with its holder job (on a shared device, each sharing job and the
    memory it reserved, and the room left); `shares` marks nodes that allow sharing. Then each
    connected Slurm cluster's nodes: state, GPUs in use, and who holds them (--json: the
    devices only; `gpudeck clusters list --json` has the clusters)."""
    base = url or default_url()
    rows = request("GET", base, "/api/gpus")
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    listing = table("node", "idx", "name", "source", "memory", "shares", "held by")
    for g in rows:
        holder = g["held_by"]
        held = f"job {holder['job_id']} ({holder['owner']})" if holder else ""
        if holder and holder.get("releasing"):
            held = f"releasing from {held}"
        if not holder and g["external_processes"]:
            held = "external process"
        held = reservations_cell(g) or held
        listing.add_row(
            g["node"], str(g["index"]), g["name"], g["source"], gib(g["memory_total_bytes"]),
            sharing_mark(g), held,
        )  # fmt: skip
    console.print(listing)
    print_cluster_nodes(base)


def submit(
    kind: Annotated[str, typer.Argument(help="job kind, e.g. sae")],
    config: Annotated[str, typer.Option(help="the kind's config as JSON, or @file.json")] = "{}",
    gpus: Annotated[str | None, typer.Option(help="device indices, e.g. 0,1")] = None,
    count: Annotated[int | None, typer.Option(help="let GPUDeck pick this many devices")] = None,
    node: Annotated[str | None, typer.Option(help="node of the devices")] = None,
    nodes: Annotated[
        int | None,
        typer.Option(help="with --count: spread it evenly over at most this many nodes"),
    ] = None,
    devices_per_node: Annotated[
        int | None, typer.Option(help="with --count: exactly this many devices on each node")
    ] = None,
    cluster: ClusterOption = None,
    partition: PartitionOption = None,
    share: ShareOption = False,
    name: Annotated[str | None, typer.Option(help="a name for the job")] = None,
    force: Annotated[bool, typer.Option(help="skip the free-memory check")] = False,
    no_queue: sched.NoQueueOption = False,
    priority: sched.PriorityOption = None,
    time_limit: sched.TimeLimitOption = None,
    depends_on: sched.DependsOnOption = None,
    preemptible: sched.PreemptibleOption = False,
    hold: sched.HoldOption = False,
    on_output: OnOutputOption = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="follow it with a progress bar; exit 0 only if it succeeds"),
    ] = False,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Submit a job on chosen devices (--gpus) or on any (--count, on one node, or spread over
    nodes with --nodes or --devices-per-node); it waits in the queue while they are busy
    (--no-queue: fail instead). With --cluster it runs on that Slurm cluster: --count GPUs
    (--nodes to span nodes) in --partition, placed by Slurm."""
    config_obj = read_config(config)
    url = url or default_url()
    if on_output is not None:
        config_obj, depends_on = prefill(url, kind, on_output, config_obj, depends_on)
    body: dict[str, Any] = {"kind": kind, "config": config_obj, "force": force}
    body |= share_body(share)  # the API checks it: a 422 naming share says why not
    body |= sched.scheduling_body(
        no_queue=no_queue, priority=priority, time_limit_s=time_limit, depends_on=depends_on,
        preemptible=preemptible, hold=hold,
    )  # fmt: skip
    if name:
        body["name"] = name
    # Checked by the API (a 422 naming the field), with --gpus too.
    body |= {k: v for k, v in (("nodes", nodes), ("devices_per_node", devices_per_node)) if v}
    # Checked by the API too: a partition without a cluster, or a cluster with --gpus, is a 422.
    body |= {k: v for k, v in (("cluster", cluster), ("partition", partition)) if v}
    if gpus is not None:
        try:
            body["devices"] = [{"index": int(i), "node": node} for i in gpus.split(",")]
        except ValueError:
            err_console.print("[red]--gpus[/red] must be comma-separated indices, e.g. 0,1")
            raise typer.Exit(2) from None
        if count is not None:  # both: the API's 422 says which to drop, never silently one
            body["count"] = count
    else:
        body["count"] = count or 1
        body["node"] = node
    job = request("POST", url, "/api/jobs", json=body)
    if as_json:
        print(json.dumps(job, indent=2))
    else:
        if job.get("cluster"):
            console.print(submitted_line(job))
        else:
            if job["status"] == "queued" and not job.get("queue"):
                # the submit answer runs no scheduling pass; reading the job does (place, reason)
                job = request("GET", url, f"/api/jobs/{job['id']}")
            console.print(sched.describe_submitted(job))
    if wait:
        wait_for(url, job["id"])


def jobs(
    status: Annotated[list[str] | None, typer.Option(help="filter by status (repeatable)")] = None,
    tag: Annotated[
        list[str] | None, typer.Option(help="only jobs with this tag (repeatable: every one)")
    ] = None,
    search: Annotated[
        str, typer.Option("--search", "-q", help="in the name, kind, tags or notes")
    ] = "",
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """List jobs, newest first."""
    params = {"status": status or [], "tag": tag or [], "q": search, "limit": limit}
    page = request("GET", url or default_url(), "/api/jobs", params=params)
    if as_json:
        print(json.dumps(page, indent=2))
        return
    listing = table(
        "id", "name", "kind", "status", "devices", "progress", "owner", "created", "tags"
    )
    for j in page["items"]:
        total = j["progress"]["total"]
        progress = f"{j['progress']['step']}/{total}" if total else str(j["progress"]["step"])
        listing.add_row(
            str(j["id"]), j["name"], j["kind"], j["status"], held_devices(j),
            progress, j["owner"], j["created_at"][:19], " ".join(j.get("tags", [])),
        )  # fmt: skip
    console.print(listing)
    console.print(f"{len(page['items'])} of {page['total']} jobs")


def held_devices(job: dict[str, Any]) -> str:
    """`vm:0,1`, or `a:0,1 b:0,1` for a job across nodes; `-` for one that never held any;
    `lab (Slurm)` for a job on Slurm cluster lab (Slurm's nodes are in `gpudeck show`)."""
    if place := cluster_place(job):
        return place
    by_node: dict[str, list[str]] = {}
    for d in job["devices"]:
        by_node.setdefault(d["node"], []).append(str(d["index"]))
    return " ".join(f"{node}:{','.join(indices)}" for node, indices in by_node.items()) or "-"


def cancel(
    job_id: Annotated[int, typer.Argument(min=1)], url: UrlOption = "", as_json: JsonOption = False
) -> None:
    """Cancel a job (a running one stops after its final checkpoint)."""
    job = request("POST", url or default_url(), f"/api/jobs/{job_id}/cancel")
    if as_json:
        print(json.dumps(job, indent=2))
        return
    note = (
        " (stopping after its final checkpoint)"
        if job["cancel_requested"] and job["status"] != "cancelled"
        else ""
    )
    console.print(f"job {job['id']} {job['status']}{note}")


def register(app: typer.Typer) -> None:
    for command in (gpus, submit, jobs, cancel):
        app.command()(command)
