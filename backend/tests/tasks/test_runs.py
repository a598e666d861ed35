"""The worker's services: claiming a job once, heartbeats, finishing, the reaper."""

from __future__ import annotations

from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.celery_app import RUN_JOB_TASK
from gpudeck.models import Allocation, JobStatus
from gpudeck.services.jobs import cancel, lookup
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.runs import reaper


def live_allocations(db: Session, job_id: int) -> int:
    db.expire_all()
    return db.query(Allocation).filter_by(job_id=job_id, released_at=None).count()


def test_a_job_is_claimed_once(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    plan = runs.claim_job(db, job.id, TEST_NODE)
    db.commit()
    assert plan is not None and plan.device_indices == [0, 1]
    assert plan.device_source == "simulated" and plan.world_size == 2
    assert runs.claim_job(db, job.id, TEST_NODE) is None  # a redelivered task is a no-op
    db.commit()


def test_a_job_of_another_node_is_not_claimed(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    assert runs.claim_job(db, job.id, "elsewhere") is None
    db.rollback()


def test_heartbeat_reports_cancel_and_drops_finished_jobs(db: Session, devices: str) -> None:
    running = make_job(db, devices=[0], status=JobStatus.running)
    done = make_job(db, devices=[1], status=JobStatus.succeeded)
    cancel.cancel_job(db, running.id)
    pulses = runs.heartbeat(db, [running.id, done.id])
    db.commit()
    assert set(pulses) == {running.id}
    assert pulses[running.id].cancel_requested_at is not None


def test_finish_releases_devices_and_is_idempotent(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1], status=JobStatus.running)
    assert runs.finish_job(db, job.id, JobStatus.failed, error="boom") is not None
    db.commit()
    assert live_allocations(db, job.id) == 0
    assert runs.finish_job(db, job.id, JobStatus.succeeded) is None  # already terminal


def test_reaper_marks_stale_jobs_lost_once(
    db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    stale = make_job(db, devices=[0], status=JobStatus.running)
    fresh = make_job(db, devices=[1], status=JobStatus.running)
    db.execute(
        text("UPDATE jobs SET heartbeat_at = now() - interval '1 minute' WHERE id = :i"),
        {"i": stale.id},
    )
    db.execute(text("UPDATE jobs SET heartbeat_at = now() WHERE id = :i"), {"i": fresh.id})
    db.commit()
    with session_factory() as first, session_factory() as second:
        reaped_first = reaper.reap_lost(first, lease_s=30)
        reaped_second = reaper.reap_lost(second, lease_s=30)  # skips the locked row
        first.commit()
        second.commit()
    assert reaped_first == [stale.id] and reaped_second == []
    db.expire_all()
    assert lookup.get_job(db, stale.id).status == JobStatus.lost
    assert lookup.get_job(db, fresh.id).status == JobStatus.running
    assert live_allocations(db, stale.id) == 0 and live_allocations(db, fresh.id) == 1


def test_run_job_task_is_registered_under_the_dispatched_name() -> None:
    from gpudeck.tasks.jobs import run_job_task

    assert run_job_task.name == RUN_JOB_TASK
