"""The Slurm clusters' part of `gpudeck gpus`: each connected cluster's nodes, as the board
shows them: Slurm's node state, its GPUs in use or free (GRES), and who holds them (GPUDeck's
jobs from the executor's last poll, the rest as other Slurm jobs). No utilization, memory or
temperature: GPUDeck does not measure cluster GPUs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpudeck.cli.clusters import access_text
from gpudeck.cli.http import console, request, table


def print_cluster_nodes(base: str) -> None:
    """One table per connected cluster after the devices; a line for one that does not answer."""
    clusters = request("GET", base, "/api/clusters")
    for cluster in clusters:
        state = request("GET", base, f"/api/clusters/{cluster['name']}/state")
        title = f"{cluster['name']} (Slurm cluster, access {access_text(cluster)})"
        if not state["reachable"]:
            since = _clock(state.get("unreachable_since") or state["read_at"])
            console.print(f"{title}: unreachable since {since}: {state['cause']}", highlight=False)
            continue
        listing = table("node", "state", "GPUs in use", "held by", title=title)
        for node in state["nodes"]:
            listing.add_row(node["name"], node["state"], _gpus(node), _holders(node))
        console.print(listing)
    if clusters:  # said once, so no missing figure is read as an idle GPU
        console.print(
            "Cluster GPUs: in use or free as Slurm allocates them; utilization, memory and "
            "temperature are not measured by GPUDeck.",
            highlight=False,
        )


def _clock(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _gpus(node: dict[str, Any]) -> str:
    """`h100: 1/2 (1)`: per GRES type, in use of count and Slurm's indices in use."""
    if not node["gpus"]:
        return "no GPUs"
    parts = []
    for g in node["gpus"]:
        indices = f" ({', '.join(map(str, g['used_indices']))})" if g["used_indices"] else ""
        parts.append(f"{g['type'] or 'gpu'}: {g['used']}/{g['count']}{indices}")
    return ", ".join(parts)


def _holders(node: dict[str, Any]) -> str:
    """GPUDeck's jobs by count (Slurm's node view does not say which GPU each holds), then the
    GPUs in use none of them accounts for."""
    jobs = node.get("jobs") or []
    held = [f"job {j['job_id']} {j['name']} ({j['owner']}): {j['gpus_per_node']}" for j in jobs]
    other = sum(g["used"] for g in node["gpus"]) - sum(j["gpus_per_node"] for j in jobs)
    if other > 0:
        held.append(f"other Slurm jobs: {other}")
    return "; ".join(held)
