"""The counts `/metrics` reports besides readings: jobs per status (a status no job is in is
absent, not 0), devices held per node (released allocations no longer count), and the owners of
the jobs seen on devices (ids of no job are left out)."""

from __future__ import annotations

from harness import TEST_NODE, make_job, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.cluster import counts
from gpudeck.services.submit import submission


def on_node(db: Session, node: str, indices: list[int], owner: str = "tester") -> Job:
    spec = JobCreate.model_validate(
        {
            "kind": "sae",
            "config": {"steps": 10, "batch_size": 64 * len(indices)},
            "devices": [{"node": node, "index": i} for i in indices],
        }
    )
    job = submission.create_job(db, spec, owner=owner)
    db.commit()
    return job


def test_jobs_are_counted_per_status_and_empty_statuses_are_absent(
    db: Session, devices: str
) -> None:
    assert counts.jobs_by_status(db) == {}
    make_job(db, devices=[0], status=JobStatus.running)
    make_job(db, devices=[1], status=JobStatus.running)
    make_job(db, devices=[2], status=JobStatus.failed)
    make_job(db, devices=[3])
    assert counts.jobs_by_status(db) == {"running": 2, "failed": 1, "queued": 1}


def test_live_allocations_are_counted_per_node_until_released(db: Session) -> None:
    register_devices(db, "4x80GiB", node="alpha")
    register_devices(db, "2x80GiB", node="beta")
    on_node(db, "alpha", [0, 1, 2])
    ended = on_node(db, "beta", [0, 1])
    assert counts.live_allocations_by_node(db) == {"alpha": 3, "beta": 2}
    db.execute(
        text("UPDATE allocations SET released_at = now() WHERE job_id = :id"), {"id": ended.id}
    )
    db.commit()
    assert counts.live_allocations_by_node(db) == {"alpha": 3}  # beta holds nothing now


def test_job_owners_name_only_jobs_that_exist(db: Session) -> None:
    register_devices(db, "2x80GiB", node=TEST_NODE)
    carols = on_node(db, TEST_NODE, [0], owner="carol")
    daves = on_node(db, TEST_NODE, [1], owner="dave")
    missing = carols.id + daves.id  # a pid's stale job id: no such job
    assert counts.job_owners(db, [carols.id, daves.id, carols.id, missing]) == {
        carols.id: "carol",
        daves.id: "dave",
    }
    assert counts.job_owners(db, []) == {}
