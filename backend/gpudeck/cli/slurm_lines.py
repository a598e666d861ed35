"""How a job on a Slurm cluster reads in the terminal: where it runs (`lab (Slurm)`), the line
`gpudeck submit --cluster` prints, and the Slurm rows of `gpudeck show` (docs/slurm.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

ClusterOption = Annotated[
    str | None,
    typer.Option(
        help="run on this Slurm cluster (`gpudeck clusters list`) instead of GPUDeck's own "
        "nodes: Slurm places it; give --count (and --nodes to span nodes)"
    ),
]
PartitionOption = Annotated[
    str | None, typer.Option(help="with --cluster: one of its partitions (default: its first)")
]


def cluster_place(job: dict[str, Any]) -> str | None:
    """`lab (Slurm)` for a job on cluster lab; None for one on GPUDeck's own nodes."""
    cluster = job.get("cluster")
    return f"{cluster} (Slurm)" if cluster else None


def submitted_line(job: dict[str, Any]) -> str:
    """The submit's answer for a cluster job: it waits for the executor to hand it to Slurm."""
    slurm = job.get("slurm") or {}
    partition = f", partition {slurm['partition']}" if slurm.get("partition") else ""
    return (
        f"job [bold]{job['id']}[/bold] {job['status']} on Slurm cluster {job['cluster']}"
        f"{partition}: Slurm places its {job['world_size']} GPUs"
    )


def slurm_rows(job: dict[str, Any]) -> list[tuple[str, str]]:
    """`gpudeck show`'s Slurm rows: cluster, Slurm's id and own state word, partition, nodes,
    attempts; Slurm's reason while it waits; that Slurm did not answer, and why, when the last
    poll read nothing (the status shown is then the last known one)."""
    if not job.get("cluster"):
        return []
    # Slurm's words are printed as they are: a node list such as n[1-2] is not markup.
    slurm = {k: escape(v) if isinstance(v, str) else v for k, v in (job.get("slurm") or {}).items()}
    requested = slurm.get("nodes_requested")
    nodes = slurm.get("nodes") or (f"{requested} requested" if requested else "-")
    rows = [
        ("cluster", f"{job['cluster']} (Slurm)"),
        ("slurm job", job.get("slurm_job_id") or "not submitted yet"),
        ("slurm state", slurm.get("state") or "-"),
        ("partition", slurm.get("partition") or "-"),
        ("slurm nodes", nodes),
        ("attempts", str(slurm.get("attempts", 0))),
    ]
    if slurm.get("unknown"):
        why = slurm.get("reason") or "no cause given"
        rows.append(("slurm", f"[yellow]did not answer ({why}); its last word is shown[/yellow]"))
    elif job["status"] == "queued" and slurm.get("reason"):
        code = f" ({slurm['reason_code']})" if slurm.get("reason_code") else ""
        rows.append(("reason", f"{slurm['reason']}{code}"))
    return rows
