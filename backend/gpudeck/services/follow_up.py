"""The job that can follow another on its output ("train an SAE on this output"), from the
source job's kind (the registry), its config and what it wrote. A source that has not
succeeded yet is named in `depends_on`: the follow-up waits for it in the queue."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudeck.engine.kinds import get_kind
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


def follow_up(job: Job, data_dir: Path) -> JobFollowUp:
    kind = get_kind(job.kind)
    describe = kind.resolve_follow_up() if kind is not None else None
    if kind is None or describe is None:
        raise NotFound(f"{job.kind} jobs offer no follow-up job", field="job_id",
                       code="no_follow_up")  # fmt: skip
    if JobStatus(job.status) in ENDED_WITHOUT_OUTPUT:
        raise Conflict(f"job {job.id} {job.status}: it wrote no output to follow",
                       field="job_id", code="no_output")  # fmt: skip
    found = describe(kind.config_model.model_validate(job.config), data_dir)
    if found is None:
        raise NotFound(f"job {job.id}'s output offers no follow-up", field="job_id",
                       code="no_follow_up")  # fmt: skip
    waits = [] if JobStatus(job.status) == JobStatus.succeeded else [job.id]
    return JobFollowUp(found.kind, found.label, found.config, waits, found.note)
