"""A map job's progress per rank (GET /api/jobs/{id}/map-progress), and the job that can
follow one on its output (GET /api/jobs/{id}/follow-up)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MapRankPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    rank: int
    chunks_done: int = Field(description="chunks this rank finished in this run")
    chunks_total: int | None = Field(
        description="this rank's share of this run; null under `dynamic` (claimed as it goes)"
    )
    items_done: int
    items_per_s: float


class MapProgressPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    num_chunks: int | None = Field(description="every chunk of the job; null before it starts")
    chunks_done_before: int = Field(description="written by an earlier run (resume)")
    strategy: str | None
    ranks: list[MapRankPublic] = Field(description="empty for a job that is not a map job")
    num_items: int | None = Field(description="every item of the job; null before it starts")
    chunks_done: int = Field(description="chunks written so far, by this run and earlier ones")
    items_done: int = Field(description="items this run has mapped")
    items_per_s: float = Field(description="the ranks still working, together")
    eta_s: float | None = Field(description="seconds to the last chunk at the rate now")
    output_dir: str | None = Field(
        default=None, description="the directory the output is written to, on the first node"
    )


class FollowUpPublic(BaseModel):
    """GET /api/jobs/{id}/follow-up: a job to submit on this job's output."""

    model_config = ConfigDict(from_attributes=True)

    kind: str = Field(description="the follow-up job's kind, e.g. sae")
    label: str = Field(description="what the dashboard's button says")
    config: dict[str, Any] = Field(description="fields the output decides; the rest: defaults")
    depends_on: list[int] = Field(description="[the source job] while it has not succeeded")
    note: str = Field(description="how a figure was found when it is a guess")
    name: str | None = Field(default=None, description="a default name for the job")
    checkpoint_field: str | None = Field(
        default=None,
        description="the config field taking one of the source's checkpoint steps "
        "(GET /api/jobs/{id}/checkpoints lists them)",
    )
