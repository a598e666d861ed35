"""`gpudeck submit sae --on-output JOB`: a job on another job's output ("train an SAE on this
output"), prefilled by the API's follow-up of JOB and waiting for it while it runs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gpudeck.cli.http import err_console, request

OnOutputOption = Annotated[
    int | None,
    typer.Option(
        "--on-output",
        min=1,
        help="work on this job's output (e.g. an SAE on extracted activations): its fields "
        "prefilled, --config on top; waits for the job while it runs",
    ),
]


def prefill(
    url: str, kind: str, source_id: int, config: dict[str, Any], depends_on: list[int] | None
) -> tuple[dict[str, Any], list[int] | None]:
    """(config, depends_on) for a `kind` job on job `source_id`'s output."""
    follow = request("GET", url, f"/api/jobs/{source_id}/follow-up")
    if follow["kind"] != kind:
        err_console.print(
            f"[red]--on-output[/red]: job {source_id}'s output feeds a {follow['kind']} job, "
            f"not {kind}"
        )
        raise typer.Exit(2)
    if follow["note"]:
        err_console.print(f"on job {source_id}'s output: {follow['note']}")
    waits = [*(depends_on or []), *(d for d in follow["depends_on"] if d not in (depends_on or []))]
    return {**follow["config"], **config}, waits or depends_on
