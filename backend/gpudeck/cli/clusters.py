"""`gpudeck clusters add slurm ...`, `gpudeck clusters list`, `gpudeck clusters remove`: the
Slurm clusters jobs may run on (admins add and remove them; anyone lists them), through the API
(/api/clusters), as the dashboard's Clusters page shows them."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from gpudeck.cli.http import (
    JsonOption,
    UrlOption,
    console,
    default_url,
    err_console,
    request,
    table,
)
from gpudeck.kinds.script.config import read_size  # the one size parser ('80 GiB')

clusters_app = typer.Typer(no_args_is_help=True, help="Connect, list and remove Slurm clusters.")
add_app = typer.Typer(no_args_is_help=True, help="Connect a cluster (admins).")
clusters_app.add_typer(add_app, name="add")


@add_app.command("slurm")
def add_slurm(
    name: Annotated[str, typer.Option("--name", help="GPUDeck's name for the cluster")],
    partitions: Annotated[
        list[str], typer.Option("--partition", "-p", help="a partition jobs may use (repeatable)")
    ],
    shared_dir: Annotated[
        str,
        typer.Option("--shared-dir", help="a directory the compute nodes share"),
    ],
    account: Annotated[str | None, typer.Option(help="sbatch --account")] = None,
    qos: Annotated[str | None, typer.Option(help="sbatch --qos")] = None,
    slurm_conf: Annotated[
        str | None,
        typer.Option("--slurm-conf", help="the slurm.conf (SLURM_CONF); default: the host's"),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            help="the Python with GPUDeck installed that compute nodes start ranks with; "
            "default: the one GPUDeck runs in, at the same path",
        ),
    ] = None,
    gpu_memory: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu-memory",
            help="a GRES type's memory, TYPE=SIZE (h100=80GiB; repeatable): a job whose "
            "estimate fits no type of its partition is refused, and Slurm is asked for one "
            "that fits",
        ),
    ] = None,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Connect a Slurm cluster whose commands run on the API's host. Its partitions are checked
    against Slurm when it answers."""
    body: dict[str, Any] = {
        "name": name, "kind": "slurm", "partitions": partitions, "shared_dir": shared_dir,
        "account": account, "qos": qos, "slurm_conf": slurm_conf, "python": python,
        "gpu_memory": _gpu_memory(gpu_memory or []),
    }  # fmt: skip
    created = request("POST", url or default_url(), "/api/clusters", json=body)
    if as_json:
        print(json.dumps(created, indent=2))
        return
    console.print(
        f"cluster {created['name']} added: partitions {', '.join(created['partitions'])}",
        highlight=False,
    )
    if not created["partitions_checked"]:
        err_console.print(f"[yellow]partitions not checked[/yellow]: {created['check_note']}")


@clusters_app.command("list")
def list_clusters(url: UrlOption = "", as_json: JsonOption = False) -> None:
    """Every cluster, with its nodes and the GPUs in use as Slurm reports them now."""
    base = url or default_url()
    rows: list[Any] = request("GET", base, "/api/clusters")
    states = [request("GET", base, f"/api/clusters/{c['name']}/state") for c in rows]
    if as_json:
        print(json.dumps([{**c, "state": s} for c, s in zip(rows, states, strict=True)], indent=2))
        return
    if not rows:
        console.print("no clusters (an admin adds one with `gpudeck clusters add slurm`)")
        return
    listing = table("name", "kind", "partitions", "account", "qos", "shared dir", "state")
    for c, s in zip(rows, states, strict=True):
        listing.add_row(
            c["name"], c["kind"], ", ".join(c["partitions"]), c["account"] or "-",
            c["qos"] or "-", c["shared_dir"], _reach(s),
        )  # fmt: skip
    console.print(listing)
    for s in states:
        if s["nodes"]:
            console.print(_nodes_table(s))


def _reach(state: dict[str, Any]) -> str:
    if not state["reachable"]:
        return f"unreachable: {state['cause']}"
    used = sum(g["used"] for n in state["nodes"] for g in n["gpus"])
    total = sum(g["count"] for n in state["nodes"] for g in n["gpus"])
    return f"{len(state['nodes'])} nodes, {used}/{total} GPUs in use"


def _nodes_table(state: dict[str, Any]) -> Any:
    nodes = table("node", "state", "partitions", "GPUs (type: in use/count)", title=state["name"])
    for n in state["nodes"]:
        gpus = ", ".join(f"{g['type'] or 'gpu'}: {g['used']}/{g['count']}" for g in n["gpus"])
        nodes.add_row(n["name"], n["state"], ", ".join(n["partitions"]), gpus or "-")
    return nodes


@clusters_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="the cluster")], url: UrlOption = "") -> None:
    """Disconnect a cluster (admins)."""
    request("DELETE", url or default_url(), f"/api/clusters/{name}")
    console.print(f"cluster {name} removed", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(clusters_app, name="clusters")


def _gpu_memory(given: list[str]) -> dict[str, int]:
    """TYPE=SIZE options as the API takes them (bytes by type)."""
    out = {}
    for item in given:
        kind, _, size = item.partition("=")
        try:
            out[kind] = int(read_size(size))  # type: ignore[call-overload]
        except ValueError as exc:
            raise typer.BadParameter(f"{item!r}: {exc}", param_hint="--gpu-memory") from None
    return out
