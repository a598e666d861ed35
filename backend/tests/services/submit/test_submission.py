"""The submit pipeline (services/submit/submission.py) is one for a job and a sweep: the same
spec submitted as a job and as a sweep of one member gives the same row, and the same refusal."""

from __future__ import annotations

import sys
from collections import Counter
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


def _steps_entered(call: Any) -> list[str]:
    """The service modules the pipeline (submit/submission.py) calls into, in order: a run of
    calls into one module is one entry."""
    pipeline = submission.__name__
    entered: list[str] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "")
        into_a_step = module.startswith("gpudeck.services.") and module != pipeline
        if caller == pipeline and into_a_step and (not entered or entered[-1] != module):
            entered.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entered


def test_a_submit_enters_no_service_module_more_than_twice(db: Session, devices: str) -> None:
    """Issue 34: following a job spec through the submit path call by call, no module is
    re-entered more than twice (before the pipeline: 24 returns, 9 of them to jobs.py)."""
    spec = JobCreate.model_validate(_spec(hold=False, count=2))
    who = Submitter("dave")
    submission.create_job(db, spec, owner=who)  # the estimate's first trace, the caches
    db.rollback()
    entered = _steps_entered(lambda: submission.create_job(db, spec, owner=who))
    db.rollback()
    steps = [m.removeprefix("gpudeck.services.") for m in entered]
    assert steps[-1] == "submit.reserve", steps  # the path ran to its reservation
    reentered = {m: n - 1 for m, n in Counter(steps).items() if n > 1}
    assert all(n <= 2 for n in reentered.values()), steps
