"""The job that can follow another on its output ("train an SAE on this output", "evaluate a
checkpoint"), from the source job's kind (the registry), its config and what it wrote. A
source that has not succeeded yet is named in `depends_on`: the follow-up waits for it in the
queue, unless the follow-up works on what the source wrote so far (its checkpoints)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.engine.kinds import FollowUp, get_kind
from gpudeck.models import Job, JobStatus
from gpudeck.services.errors import Conflict, NotFound

# A source in one of these states will never write its output: nothing can follow it.
ENDED_WITHOUT_OUTPUT = {JobStatus.failed, JobStatus.cancelled, JobStatus.lost, JobStatus.timeout}


@dataclass(frozen=True)
class JobFollowUp:
    kind: str
    label: str
    config: dict[str, Any]
    depends_on: list[int]
    note: str
    name: str | None = None
    checkpoint_field: str | None = None


def _describe(job: Job, data_dir: Path) -> FollowUp | None:
    kind = get_kind(job.kind)
    describe = kind.resolve_follow_up() if kind is not None else None
    if kind is None or describe is None:
        return None
    return describe(kind.config_model.model_validate(job.config), data_dir)


def follow_up(job: Job, data_dir: Path) -> JobFollowUp:
    kind = get_kind(job.kind)
    if kind is None or kind.follow_up is None:
        raise NotFound(f"{job.kind} jobs offer no follow-up job", field="job_id",
                       code="no_follow_up")  # fmt: skip
    # Read first: whether the follow-up needs the source's output decides what a failed
    # source may offer (an evaluation of a cancelled run's checkpoints is fine).
    found = _describe(job, data_dir)
    ended_without_output = JobStatus(job.status) in ENDED_WITHOUT_OUTPUT
    if ended_without_output and (found is None or found.needs_output):
        raise Conflict(f"job {job.id} {job.status}: it wrote no output to follow",
                       field="job_id", code="no_output")  # fmt: skip
    if found is None:
        raise NotFound(f"job {job.id}'s output offers no follow-up", field="job_id",
                       code="no_follow_up")  # fmt: skip
    config = dict(found.config)
    if found.source_field is not None:
        config[found.source_field] = job.id
    waits = found.needs_output and JobStatus(job.status) != JobStatus.succeeded
    name = f"{found.name} of job {job.id}" if found.name else None
    depends_on = [job.id] if waits else []
    return JobFollowUp(
        found.kind, found.label, config, depends_on, found.note, name, found.checkpoint_field
    )


def follow_up_jobs(session: Session, job: Job, data_dir: Path, *, limit: int = 50) -> list[Job]:
    """The jobs that follow `job` by naming it in their config (the follow-up's source field:
    the evaluations of an SAE's checkpoints), newest first; [] for follow-ups that name no
    source (those wait for it through `depends_on`)."""
    found = _describe(job, data_dir)
    if found is None or found.source_field is None:
        return []
    # Compared as text: a cast would fail on another kind's config holding a string there.
    named = Job.config[found.source_field].as_string() == str(job.id)
    query = select(Job).where(Job.kind == found.kind, named).order_by(Job.id.desc()).limit(limit)
    return list(session.scalars(query))
