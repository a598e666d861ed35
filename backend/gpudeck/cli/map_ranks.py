"""A map job's ranks in the terminal: each rank's chunks done of its share, items and items/s,
and the whole job's chunks, rate and ETA (`gpudeck show`, and the line `gpudeck submit --wait` /
`logs --follow` draws)."""

from __future__ import annotations

from typing import Any

import httpx

from gpudeck.cli.http import auth_headers, tls

BAR_WIDTH = 20


def is_map_kind(kind: dict[str, Any]) -> bool:
    """A map kind resumes from the chunks it wrote, and its ranks report chunks."""
    return kind.get("resumes_from") == "output"


def fetch(url: str, job_id: int) -> dict[str, Any] | None:
    """The job's per-rank progress, or None when the API cannot say now (Redis down): the
    rest of `show` or the progress bar is still worth drawing."""
    try:
        response = httpx.get(
            f"{url.rstrip('/')}/api/jobs/{job_id}/map-progress",
            headers=auth_headers(),
            timeout=10,
            verify=tls(),
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


def eta_text(seconds: float | None) -> str:
    """`ETA 45 s`, `ETA 12 min`, `ETA 3.5 h`; `ETA ?` until the job has a rate."""
    if seconds is None:
        return "ETA ?"
    if seconds < 90:
        return f"ETA {round(seconds)} s"
    if seconds < 5400:
        return f"ETA {round(seconds / 60)} min"
    return f"ETA {seconds / 3600:.1f} h"


def total_line(progress: dict[str, Any]) -> str:
    """The whole job: `total   ########............  9/12 chunks  56 items  6 items/s  ETA 2 s`."""
    done, total = int(progress["chunks_done"]), progress["num_chunks"]
    filled = round(BAR_WIDTH * min(1.0, done / total)) if total else 0
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    return (
        f"total   {bar}  {done}/{'?' if total is None else total} chunks  "
        f"{progress['items_done']} items  {progress['items_per_s']:.3g} items/s  "
        f"{eta_text(progress['eta_s'])}"
    )


def compact(progress: dict[str, Any]) -> str:
    """All ranks on one line, for beside a progress bar: `r0 3/5 r1 5/5`."""
    parts = []
    for rank in progress["ranks"]:
        share = _share(progress, rank)
        parts.append(f"r{rank['rank']} {rank['chunks_done']}/{'?' if share is None else share}")
    return " ".join(parts)
