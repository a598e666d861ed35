"""`gpudeck clusters add slurm ...`, `gpudeck clusters list`, `gpudeck clusters remove`: the
Slurm clusters jobs may run on (admins add and remove them; anyone lists them), through the API
(/api/clusters), as the dashboard's Clusters page shows them; `gpudeck clusters types`: which
GPU types of a partition a memory estimate fits, and the one a submit asks Slurm for, as the
new-job form shows them."""

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
    gib,
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
    ssh: Annotated[
        str | None,
        typer.Option(
            "--ssh",
            help="user@host of a login node: Slurm's commands run there over ssh (access "
            "'ssh'); default: on the API's host",
        ),
    ] = None,
    ssh_port: Annotated[int, typer.Option("--ssh-port", help="the login node's port")] = 22,
    ssh_key: Annotated[
        str | None,
        typer.Option("--ssh-key", help="the private key, a path on the API's host (mode 600)"),
    ] = None,
    known_hosts: Annotated[
        str | None,
        typer.Option(
            "--known-hosts", help="a known_hosts file on the API's host with the login node's key"
        ),
    ] = None,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Connect a Slurm cluster whose commands run on the API's host, or with --ssh on a login
    node. Its partitions are checked against Slurm when it answers."""
    body: dict[str, Any] = {
        "name": name, "kind": "slurm", "partitions": partitions, "shared_dir": shared_dir,
        "account": account, "qos": qos, "slurm_conf": slurm_conf, "python": python,
        "gpu_memory": _gpu_memory(gpu_memory or []),
    }  # fmt: skip
    if ssh is not None or ssh_key is not None or known_hosts is not None:
        body.update(access="ssh", ssh_host=ssh, ssh_port=ssh_port, ssh_key_path=ssh_key,
                    known_hosts_path=known_hosts)  # fmt: skip
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
    listing = table("name", "kind", "access", "partitions", "account", "qos", "shared dir", "state")
    for c, s in zip(rows, states, strict=True):
        listing.add_row(
            c["name"], c["kind"], access_text(c), ", ".join(c["partitions"]), c["account"] or "-",
            c["qos"] or "-", c["shared_dir"], _reach(s),
        )  # fmt: skip
    console.print(listing)
    for s in states:
        if s["nodes"]:
            console.print(_nodes_table(s))


def access_text(cluster: dict[str, Any]) -> str:
    if cluster["access"] != "ssh":
        return cluster["access"]
    port = "" if cluster.get("ssh_port") in (None, 22) else f":{cluster['ssh_port']}"
    return f"ssh {cluster['ssh_host']}{port}"


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


@clusters_app.command("types")
def types(
    name: Annotated[str, typer.Argument(help="the cluster")],
    partition: Annotated[
        str | None,
        typer.Option("--partition", "-p", help="one of the cluster's; default: its first"),
    ] = None,
    estimate: Annotated[
        str | None,
        typer.Option(
            "--estimate",
            help="the job's memory per device (30GiB; `gpudeck estimate` says it): which "
            "types fit it, and the one GPUDeck asks Slurm for",
        ),
    ] = None,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """The partition's GPU (GRES) types: memory, usable memory, count, whether the estimate
    fits, and the type a submit asks for (or why it would be refused)."""
    params: dict[str, Any] = {"partition": partition} if partition else {}
    if estimate is not None:
        params["estimate_bytes"] = _size(estimate, "--estimate")
    shown = request("GET", url or default_url(), f"/api/clusters/{name}/gpu-types", params=params)
    if as_json:
        print(json.dumps(shown, indent=2))
        return
    listing = table("type", "memory", "usable", "GPUs", "fits", title=_types_title(shown))
    for t in shown["types"]:
        count = "?" if t["count"] is None else str(t["count"])
        fits = {True: "yes", False: "no", None: "-"}[t["fits"]]
        listing.add_row(t["type"] or "(untyped)", gib(t["memory_bytes"]), gib(t["usable_bytes"]),
                        count, fits)  # fmt: skip
    console.print(listing)
    if not shown["reachable"]:
        err_console.print(
            f"[yellow]Slurm did not answer[/yellow]: {shown['cause']}; the configured types, "
            "counts unknown"
        )
    if shown["refusal"]:
        err_console.print(f"[red]a submit would be refused[/red]: {shown['refusal']}")
    else:
        console.print(f"GPUDeck will request: {shown['gpu_type'] or 'any type'}", highlight=False)


def _types_title(shown: dict[str, Any]) -> str:
    title = f"{shown['cluster']}, partition {shown['partition']}"
    if shown["estimate_bytes"] is not None:
        title += f", {gib(shown['estimate_bytes'])} per device"
    return title


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
        out[kind] = _size(size, "--gpu-memory", item)
    return out


def _size(text: str, option: str, item: str | None = None) -> int:
    """A size option ('80GiB') in bytes; a bad one names the option."""
    try:
        return int(read_size(text))  # type: ignore[call-overload]
    except ValueError as exc:
        raise typer.BadParameter(f"{item or text!r}: {exc}", param_hint=option) from None
