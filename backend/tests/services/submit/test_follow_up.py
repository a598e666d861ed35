"""The job that follows another (services/submit/follow_up.py): what a source offers by its kind
and state (an SAE's evaluation at any state, it reads checkpoints; an extraction's SAE waits for
an unfinished source and is refused for one that ended without output), and which jobs already
follow a source (the evaluations naming it, newest first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import TEST_NODE
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.services.errors import Conflict, NotFound
from gpudeck.services.submit.follow_up import ENDED_WITHOUT_OUTPUT, follow_up, follow_up_jobs

EXTRACTION = {"model": "m", "input": "ids.npy", "hook": "transformer.h.0", "output": "acts/x"}


def _source(kind: str, status: JobStatus, config: dict[str, Any] | None = None) -> Job:
    """A source job as the route reads it; follow_up reads its row only, never the database."""
    return Job(id=41, name="src", kind=kind, config=config or {}, status=status, node=TEST_NODE)


@pytest.mark.parametrize(
    "status", [JobStatus.queued, JobStatus.running, *sorted(ENDED_WITHOUT_OUTPUT)]
)
def test_an_sae_offers_its_evaluation_whatever_its_state_and_waits_for_none(
    status: JobStatus, tmp_path: Path
) -> None:
    # The evaluation reads the checkpoints written so far: a cancelled run's are worth scoring.
    found = follow_up(_source("sae", status), tmp_path)
    assert (found.kind, found.depends_on) == ("sae_eval", [])
    assert found.config["source_job"] == 41  # the follow-up's source field names the job
    assert (found.name, found.checkpoint_field) == ("eval of job 41", "step")


def test_an_extraction_follow_up_waits_for_an_unfinished_source_only(tmp_path: Path) -> None:
    waiting = follow_up(_source("activations", JobStatus.running, EXTRACTION), tmp_path)
    assert (waiting.kind, waiting.depends_on) == ("sae", [41])
    assert "source_job" not in waiting.config  # it names its source through depends_on
    done = follow_up(_source("activations", JobStatus.succeeded, EXTRACTION), tmp_path)
    assert done.depends_on == []
    assert done.config["dataset"] == {"type": "file", "path": "acts/x/activations.safetensors"}


@pytest.mark.parametrize("status", sorted(ENDED_WITHOUT_OUTPUT))
def test_a_source_that_ended_without_output_offers_nothing_that_needs_it(
    status: JobStatus, tmp_path: Path
) -> None:
    with pytest.raises(Conflict) as refused:
        follow_up(_source("activations", status, EXTRACTION), tmp_path)
    assert (refused.value.code, refused.value.field) == ("no_output", "job_id")
    assert f"job 41 {status}" in refused.value.message


@pytest.mark.parametrize("kind", ["script", "sae_eval", "no_such_kind"])
def test_a_kind_without_a_follow_up_is_not_found(kind: str, tmp_path: Path) -> None:
    with pytest.raises(NotFound) as missing:
        follow_up(_source(kind, JobStatus.succeeded), tmp_path)
    assert (missing.value.code, missing.value.field) == ("no_follow_up", "job_id")


def _job(db: Session, kind: str, config: dict[str, Any]) -> Job:
    job = Job(name=kind, kind=kind, config=config, node=TEST_NODE, world_size=1)
    db.add(job)
    db.flush()
    return job


def test_the_jobs_that_follow_a_source_are_its_evaluations_newest_first(
    db: Session, tmp_path: Path
) -> None:
    source = _job(db, "sae", {})
    other = _job(db, "sae", {})
    first = _job(db, "sae_eval", {"source_job": source.id})
    _job(db, "sae_eval", {"source_job": other.id})  # another source's: not listed
    # A script whose config happens to hold the same field is not an evaluation of it.
    _job(db, "script", {"source_job": source.id})
    second = _job(db, "sae_eval", {"source_job": source.id})
    assert [j.id for j in follow_up_jobs(db, source, tmp_path)] == [second.id, first.id]
    assert [j.id for j in follow_up_jobs(db, source, tmp_path, limit=1)] == [second.id]


def test_follow_ups_that_name_no_source_are_not_listed(db: Session, tmp_path: Path) -> None:
    extraction = _job(db, "activations", EXTRACTION)
    _job(db, "sae", {"source_job": extraction.id})  # an SAE waits on it through depends_on
    assert follow_up_jobs(db, extraction, tmp_path) == []
    assert follow_up_jobs(db, _job(db, "script", {"entrypoint": "t.py"}), tmp_path) == []
