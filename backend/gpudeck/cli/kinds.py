"""`gpudeck kinds`: the job kinds the server offers, and those it refused, with why."""

from __future__ import annotations

import json

import typer

from gpudeck.cli.http import JsonOption, UrlOption, console, default_url, request, table


def kinds(url: UrlOption = "", as_json: JsonOption = False) -> None:
    """Each job kind with the kind API version it is written for; a kind the server refused
    (a version it does not run) is listed as unavailable, and why is said below the table."""
    listed = request("GET", url or default_url(), "/api/kinds")
    if as_json:
        print(json.dumps(listed, indent=2))
        return
    shown = table("kind", "api", "status", "description", title="job kinds")
    for kind in listed:
        status = "available" if kind["available"] else "[red]unavailable[/red]"
        shown.add_row(kind["name"], str(kind["api_version"]), status, kind["description"])
    console.print(shown)
    for kind in listed:
        if not kind["available"]:  # a reason is a sentence: whole, on its own line
            console.print(
                f"{kind['name']} is unavailable: {kind['unavailable_reason']}", markup=False
            )


def register(app: typer.Typer) -> None:
    app.command()(kinds)
