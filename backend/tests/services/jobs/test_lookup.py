"""services/jobs/lookup: a job by id (an unknown one is JobNotFound, named), and a page of jobs,
newest first, filtered by status, with the total of all the filter matches, not of the page."""

from __future__ import annotations

import pytest
from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.services.errors import JobNotFound
from gpudeck.services.jobs import lookup

S = JobStatus


def test_get_job_returns_the_job_and_names_an_unknown_one(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    assert lookup.get_job(db, job.id).id == job.id
    with pytest.raises(JobNotFound) as info:
        lookup.get_job(db, job.id + 1)
    assert info.value.message == f"job {job.id + 1} does not exist"
    assert info.value.field == "job_id"


def test_list_jobs_pages_newest_first_and_counts_every_match(db: Session, devices: str) -> None:
    statuses = [S.queued, S.running, S.succeeded, S.running, S.failed]
    ids = [make_job(db, devices=[i], status=s).id for i, s in enumerate(statuses)]

    page, total = lookup.list_jobs(db, statuses=None, limit=2, offset=0)
    assert [j.id for j in page] == ids[::-1][:2] and total == len(ids)
    page, total = lookup.list_jobs(db, statuses=None, limit=2, offset=4)
    assert [j.id for j in page] == [ids[0]] and total == len(ids)

    running, total = lookup.list_jobs(db, statuses=["running"], limit=1, offset=0)
    assert [j.id for j in running] == [ids[3]] and total == 2
    ended, total = lookup.list_jobs(db, statuses=["succeeded", "failed"], limit=10, offset=0)
    assert [j.id for j in ended] == [ids[4], ids[2]] and total == 2
    none, total = lookup.list_jobs(db, statuses=["lost"], limit=10, offset=0)
    assert none == [] and total == 0
    # An empty filter is no filter (the API's `status` query left out).
    every, total = lookup.list_jobs(db, statuses=[], limit=10, offset=0)
    assert [j.id for j in every] == ids[::-1] and total == len(ids)
