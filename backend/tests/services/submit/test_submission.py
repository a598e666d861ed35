"""The submit pipeline (services/submit/submission.py) is one for a job and a sweep: the same
spec submitted as a job and as a sweep of one member gives the same row, and the same refusal."""

from __future__ import annotations

from typing import Any

import pytest
from harness import TEST_NODE
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.schemas.jobs import JobCreate
from gpudeck.schemas.sweeps import SweepCreate
from gpudeck.services.errors import DomainError
from gpudeck.services.submit import submission
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.sweeps import create

# What a sweep member's row has of its own: who it is, and which sweep it belongs to.
OWN = {"id", "name", "created_at", "updated_at", "sweep_id", "sweep_index", "sweep_params"}


def _row(job: Job) -> dict[str, Any]:
    return {c.key: getattr(job, c.key) for c in Job.__table__.columns if c.key not in OWN}


def _spec(**fields: Any) -> dict[str, Any]:
    """A job that waits (held), so neither path reserves devices: the rows alone differ."""
    base = {
        "kind": "sae",
        "config": {"steps": 10, "batch_size": 64, "lr": 1e-3},
        "count": 2,
        "node": TEST_NODE,
        "hold": True,
        "priority": 0,
        "time_limit_s": 600,
        "preemptible": True,
    }
    return base | fields


def _as_job(db: Session, spec: dict[str, Any], who: Submitter) -> Job:
    job = submission.create_job(db, JobCreate.model_validate(spec), owner=who)
    db.commit()
    return job


def _as_sweep_of_one(db: Session, spec: dict[str, Any], who: Submitter) -> Job:
    """The spec with its lr as the one parameter value: the member's config is the job's."""
    lr = spec["config"]["lr"]
    body = {"job": spec, "parameters": {"grid": {"lr": [lr]}}}
    sweep = create.create_sweep(db, SweepCreate.model_validate(body), owner=who)
    db.commit()
    return db.scalars(select(Job).where(Job.sweep_id == sweep.id)).one()


def test_a_job_and_a_one_member_sweep_of_one_spec_give_the_same_row(
    db: Session, devices: str
) -> None:
    who = Submitter("alice", default_time_limit_s=3600)
    job = _as_job(db, _spec(), who)
    member = _as_sweep_of_one(db, _spec(), who)
    assert member.sweep_index == 0 and member.sweep_params == {"lr": 1e-3}
    assert _row(member) == _row(job)
    # The row is the spec's, not only equal: the estimate, the time limit and the steps.
    assert job.estimate_bytes_per_device and job.estimate_bytes_per_device > 0
    assert (job.time_limit_s, job.progress_total, job.world_size) == (600, 10, 2)


def test_the_default_time_limit_comes_from_the_submitter_on_both_paths(
    db: Session, devices: str
) -> None:
    who = Submitter("bob", default_time_limit_s=1234)
    spec = _spec()
    del spec["time_limit_s"]
    assert _as_job(db, spec, who).time_limit_s == 1234
    assert _as_sweep_of_one(db, spec, who).time_limit_s == 1234


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"priority": 5}, "priority"),  # only an admin may raise it
        ({"time_limit_s": 90_000}, "time_limit_s"),  # past the operator's maximum
        ({"count": 9}, "count"),  # more devices than the node has
        ({"config": {"steps": 10, "batch_size": 63, "lr": 1e-3}}, "config.batch_size"),
    ],
)
def test_both_paths_refuse_a_bad_spec_on_the_same_field(
    db: Session, devices: str, fields: dict[str, Any], field: str
) -> None:
    who = Submitter("carol", max_time_limit_s=86400)
    spec = _spec(**fields)
    with pytest.raises(DomainError) as as_job:
        _as_job(db, spec, who)
    db.rollback()
    with pytest.raises(DomainError) as as_sweep:
        _as_sweep_of_one(db, spec, who)
    db.rollback()
    assert type(as_job.value) is type(as_sweep.value)
    assert field in str(as_job.value.extra) + str(as_job.value.field)
    # The sweep names its member (members[0].config...) where a field is per member.
    assert field in str(as_sweep.value.extra) + str(as_sweep.value.field)
    assert db.scalar(select(Job.id).limit(1)) is None  # nothing was created by either
