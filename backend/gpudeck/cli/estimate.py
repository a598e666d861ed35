"""`gpudeck estimate`: a job's peak memory per device, before launch, as a table."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from gpudeck.cli.http import (
    JsonOption,
    UrlOption,
    console,
    default_url,
    read_config,
    request,
)


def _mib(n: int) -> str:
    return f"{n / 1024**2:,.1f} MiB"


def estimate(
    kind: Annotated[str, typer.Argument(help="job kind, e.g. sae")],
    config: Annotated[str, typer.Option(help="the kind's config as JSON, or @file.json")] = "{}",
    world_size: Annotated[int, typer.Option(min=1, max=64, help="number of devices")] = 1,
    device_type: Annotated[
        str,
        typer.Option(
            help="cuda: the one estimate every job is placed by, on simulated devices too (they "
            "stand for GPUs); cpu: what the step holds on a CPU, without the CUDA allocator's "
            "rounding and workspace"
        ),
    ] = "cuda",
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """How much memory each device will need, broken down, and how it was worked out."""
    config_obj = read_config(config)
    body = {
        "kind": kind,
        "config": config_obj,
        "world_size": world_size,
        "device_type": device_type,
    }
    result = request("POST", url or default_url(), "/api/estimate", json=body)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table("component", "per device", "note", title=f"{kind} on {world_size} device(s)")
    for part in result["breakdown"]:
        table.add_row(part["name"], _mib(part["bytes"]), part["note"])
    table.add_section()
    table.add_row("[bold]total[/bold]", f"[bold]{_mib(result['bytes_per_device'])}[/bold]", "")
    console.print(table)
    console.print(f"method: {result['method']}")


def register(app: typer.Typer) -> None:
    app.command()(estimate)
