"""A map job's ranks in the terminal: each rank's chunks done of its share, items and items/s
(`gpudeck show`, and the line `gpudeck submit --wait` / `logs --follow` draws)."""

from __future__ import annotations

from typing import Any

import httpx

from gpudeck.cli.http import auth_headers

BAR_WIDTH = 20


def is_map_kind(kind: dict[str, Any]) -> bool:
    """A map kind resumes from the chunks it wrote, and its ranks report chunks."""
    return kind.get("resumes_from") == "output"


def fetch(url: str, job_id: int) -> dict[str, Any] | None:
    """The job's per-rank progress, or None when the API cannot say now (Redis down): the
    rest of `show` or the progress bar is still worth drawing."""
    try:
        response = httpx.get(
            f"{url.rstrip('/')}/api/jobs/{job_id}/map-progress", headers=auth_headers(), timeout=10
        )
    except httpx.HTTPError:
        return None
    return response.json() if response.status_code == 200 else None


def _share(progress: dict[str, Any], rank: dict[str, Any]) -> int | None:
    """A rank's share; under `dynamic` (none of its own) the chunks left for the run."""
    if rank["chunks_total"] is not None:
        return int(rank["chunks_total"])
    if progress["num_chunks"] is None:
        return None
    return int(progress["num_chunks"]) - int(progress["chunks_done_before"])


def rank_lines(progress: dict[str, Any]) -> list[str]:
    """One line per rank: `rank 0  ########............  3/5 chunks  48 items  12.5 items/s`."""
    lines = []
    for rank in progress["ranks"]:
        done, share = int(rank["chunks_done"]), _share(progress, rank)
        filled = round(BAR_WIDTH * min(1.0, done / share)) if share else 0
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        of = f"{done}/{share}" if share is not None else str(done)
        lines.append(
            f"rank {rank['rank']}  {bar}  {of} chunks  {rank['items_done']} items  "
            f"{rank['items_per_s']:.3g} items/s"
        )
    return lines


def compact(progress: dict[str, Any]) -> str:
    """All ranks on one line, for beside a progress bar: `r0 3/5 r1 5/5`."""
    parts = []
    for rank in progress["ranks"]:
        share = _share(progress, rank)
        parts.append(f"r{rank['rank']} {rank['chunks_done']}/{'?' if share is None else share}")
    return " ".join(parts)
