"""Client commands: talk to a running GPUDeck API over HTTP."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)

UrlOption = Annotated[
    str,
    typer.Option(envvar="GPUDECK_URL", help="the GPUDeck API (default from GPUDECK_HOST/PORT)"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]


def default_url() -> str:
    host = os.environ.get("GPUDECK_HOST", "127.0.0.1")
    return f"http://{host}:{os.environ.get('GPUDECK_PORT', '8000')}"


def request(method: str, url: str, path: str, **kwargs: Any) -> Any:
    """Call the API; a 4xx prints the field and the reason and exits 1."""
    try:
        token = os.environ.get("GPUDECK_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = httpx.request(
            method, url.rstrip("/") + path, timeout=30, headers=headers, **kwargs
        )
    except httpx.HTTPError as exc:
        err_console.print(f"[red]cannot reach GPUDeck at {url}[/red]: {exc}")
        raise typer.Exit(1) from None
    if response.status_code >= 400:
        _print_error(response)
        raise typer.Exit(1)
    return response.json()


def _print_error(response: httpx.Response) -> None:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = response.text
    if isinstance(detail, list):
        for err in detail:
            field = ".".join(str(p) for p in err.get("loc", []) if p != "body")
            err_console.print(
                f"[red]{response.status_code}[/red] {field or 'request'}: {err.get('msg')}"
            )
    elif isinstance(detail, dict):
        field = detail.get("field") or "request"
        err_console.print(f"[red]{response.status_code}[/red] {field}: {detail.get('message')}")
    else:
        err_console.print(f"[red]{response.status_code}[/red] {detail}")


def gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 1024**3:.1f} GiB"


def gpus(url: UrlOption = "", as_json: JsonOption = False) -> None:
    """List every device with its holder job."""
    rows = request("GET", url or default_url(), "/api/gpus")
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table("node", "idx", "name", "source", "memory", "held by")
    for g in rows:
        holder = g["held_by"]
        held = f"job {holder['job_id']} ({holder['owner']})" if holder else ""
        if not holder and g["external_processes"]:
            held = "external process"
        table.add_row(
            g["node"], str(g["index"]), g["name"], g["source"], gib(g["memory_total_bytes"]), held
        )
    console.print(table)


def submit(
    kind: Annotated[str, typer.Argument(help="job kind, e.g. sae")],
    config: Annotated[str, typer.Option(help="the kind's config as JSON, or @file.json")] = "{}",
    gpus: Annotated[str | None, typer.Option(help="device indices, e.g. 0,1")] = None,
    count: Annotated[int | None, typer.Option(help="let GPUDeck pick this many devices")] = None,
    node: Annotated[str | None, typer.Option(help="node of the devices")] = None,
    name: Annotated[str | None, typer.Option(help="a name for the job")] = None,
    force: Annotated[bool, typer.Option(help="skip the free-memory check")] = False,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """Submit a job on chosen devices (--gpus) or on any free ones (--count)."""
    text = open(config[1:]).read() if config.startswith("@") else config  # noqa: SIM115
    try:
        config_obj = json.loads(text)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]--config[/red] is not JSON: {exc}")
        raise typer.Exit(2) from None
    body: dict[str, Any] = {"kind": kind, "config": config_obj, "force": force}
    if name:
        body["name"] = name
    if gpus is not None:
        try:
            body["devices"] = [{"index": int(i), "node": node} for i in gpus.split(",")]
        except ValueError:
            err_console.print("[red]--gpus[/red] must be comma-separated indices, e.g. 0,1")
            raise typer.Exit(2) from None
    else:
        body["count"] = count or 1
        body["node"] = node
    job = request("POST", url or default_url(), "/api/jobs", json=body)
    if as_json:
        print(json.dumps(job, indent=2))
        return
    devices = ", ".join(str(d["index"]) for d in job["devices"])
    console.print(
        f"job [bold]{job['id']}[/bold] {job['status']} on {job['node']} devices {devices}"
    )


def jobs(
    status: Annotated[list[str] | None, typer.Option(help="filter by status (repeatable)")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    url: UrlOption = "",
    as_json: JsonOption = False,
) -> None:
    """List jobs, newest first."""
    page = request(
        "GET", url or default_url(), "/api/jobs", params={"status": status or [], "limit": limit}
    )
    if as_json:
        print(json.dumps(page, indent=2))
        return
    table = Table("id", "name", "kind", "status", "devices", "progress", "owner", "created")
    for j in page["items"]:
        total = j["progress"]["total"]
        progress = f"{j['progress']['step']}/{total}" if total else str(j["progress"]["step"])
        devices = ",".join(str(d["index"]) for d in j["devices"])
        table.add_row(
            str(j["id"]), j["name"], j["kind"], j["status"], f"{j['node']}:{devices}",
            progress, j["owner"], j["created_at"][:19],
        )  # fmt: skip
    console.print(table)
    console.print(f"{len(page['items'])} of {page['total']} jobs")


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
