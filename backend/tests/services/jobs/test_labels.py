"""A job's tags and notes (services/jobs/labels.py): replaced or changed in place, each tag
once and in the order given, at most MAX_TAGS, the notes only where given."""

from __future__ import annotations

import pytest
from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.services.errors import InvalidInput
from gpudeck.services.jobs.labels import MAX_TAGS, relabel


def _reread(db: Session, job: Job) -> Job:
    db.commit()
    db.expire_all()
    found = db.get(Job, job.id)
    assert found is not None
    return found


def test_tags_replace_add_and_remove_in_place_each_once(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    relabel(db, job, tags=["baseline", "lr", "baseline"])
    assert _reread(db, job).tags == ["baseline", "lr"]
    job = _reread(db, job)
    relabel(db, job, add_tags=["k8", "lr"], remove_tags=["baseline"])
    assert _reread(db, job).tags == ["lr", "k8"]


def test_notes_change_only_when_given(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    relabel(db, job, notes="why: the lr sweep's best")
    relabel(db, _reread(db, job), add_tags=["best"])
    job = _reread(db, job)
    assert (job.notes, job.tags) == ("why: the lr sweep's best", ["best"])
    relabel(db, job, notes="")
    assert _reread(db, job).notes == ""


def test_more_than_max_tags_is_refused_and_changes_nothing(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    relabel(db, job, tags=["kept"])
    job = _reread(db, job)
    with pytest.raises(InvalidInput) as refused:
        relabel(db, job, add_tags=[f"t{i}" for i in range(MAX_TAGS)])
    assert refused.value.extra["errors"][0][0] == "tags"
    db.rollback()
    assert _reread(db, job).tags == ["kept"]
