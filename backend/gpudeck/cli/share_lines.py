"""What the CLI says of sharing a device by memory (docs/sharing.md): the --share option of
`submit` and `sweep submit`, a job's share in `gpudeck show`, each device's reservations in
`gpudeck gpus`. Pure functions of the API's JSON."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gpudeck.cli.http import gib

ShareOption = Annotated[
    bool,
    typer.Option(
        "--share",
        help="share each device by memory with other sharing jobs: reserve the kind's estimate "
        "(+ a CUDA context reserve) instead of the whole device; the node must allow sharing",
    ),
]


def share_body(share: bool) -> dict[str, str]:
    """The submit body's `share`, sent only when asked (the API's default is exclusive)."""
    return {"share": "memory"} if share else {}


def share_row(job: dict[str, Any]) -> tuple[str, str]:
    """`gpudeck show`'s share row: 'memory: reserves 3.5 GiB per device' or 'exclusive'."""
    if job.get("share") == "memory":
        return ("share", f"memory: reserves {gib(job.get('reserved_bytes_per_device'))} per device")
    return ("share", "exclusive (whole devices)")


def reservations_cell(gpu: dict[str, Any]) -> str | None:
    """`gpudeck gpus`'s holder cell for a shared device: each job with its bytes, then the room
    left ('job 3 (ada) 3.5 GiB, job 4 (bob) 2.5 GiB; 1.5 GiB free'); None: not shared."""
    held = gpu.get("reservations") or []
    if not held:
        return None
    jobs = ", ".join(
        f"{'releasing ' if r.get('releasing') else ''}job {r['job_id']} ({r['owner']}) "
        f"{gib(r['reserved_bytes'])}"
        for r in held
    )
    room = gpu.get("reservation_room_bytes")
    return f"{jobs}; {gib(max(0, room))} free" if room is not None else jobs


def sharing_mark(gpu: dict[str, Any]) -> str:
    """The gpus table's share column: 'yes' where its node allows sharing."""
    return "yes" if gpu.get("node_shares_memory") else ""
