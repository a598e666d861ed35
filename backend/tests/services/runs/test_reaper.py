"""services/runs/reaper: active jobs whose worker stopped heartbeating are `lost` and their
devices freed, once however many reapers run, never while contact with the database was broken,
and with an error that names the silent node and the lease."""

from __future__ import annotations

from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import Allocation, JobStatus
from gpudeck.services.jobs import lookup
from gpudeck.services.runs import reaper


def live_allocations(db: Session, job_id: int) -> int:
    db.expire_all()
    return db.query(Allocation).filter_by(job_id=job_id, released_at=None).count()


def silent_for(db: Session, job_id: int, seconds: int) -> None:
    db.execute(
        text("UPDATE jobs SET heartbeat_at = now() - make_interval(secs => :s) WHERE id = :i"),
        {"s": seconds, "i": job_id},
    )
    db.commit()


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


def test_the_error_names_the_silent_node_and_the_lease(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0], status=JobStatus.starting)  # lost before it ran, too
    silent_for(db, job.id, 90)
    assert reaper.reap_lost(db, lease_s=30) == [job.id]
    db.commit()
    lost = lookup.get_job(db, job.id)
    assert lost.status == JobStatus.lost and lost.finished_at is not None
    assert lost.error is not None
    assert lost.error.startswith(f"node {TEST_NODE}: no heartbeat for over 30 s")


def test_nothing_is_reaped_when_contact_was_broken_while_it_waited(
    db: Session, devices: str
) -> None:
    """A paused database leaves every heartbeat old: that is not the workers' fault."""
    job = make_job(db, devices=[0], status=JobStatus.running)
    silent_for(db, job.id, 90)
    assert reaper.reap_lost(db, lease_s=30, still_in_contact=lambda: False) == []
    db.commit()
    assert lookup.get_job(db, job.id).status == JobStatus.running
    assert live_allocations(db, job.id) == 1
    assert reaper.reap_lost(db, lease_s=30) == [job.id]  # the next look, in contact, reaps it
    db.rollback()


def test_only_active_jobs_are_reaped_and_only_past_the_lease(db: Session, devices: str) -> None:
    queued = make_job(db, devices=[0])
    ended = make_job(db, devices=[1], status=JobStatus.succeeded)
    within = make_job(db, devices=[2], status=JobStatus.running)
    for job in (queued, ended):
        silent_for(db, job.id, 3600)
    silent_for(db, within.id, 20)
    assert reaper.reap_lost(db, lease_s=30) == []
    db.commit()
    assert [lookup.get_job(db, j.id).status for j in (queued, ended, within)] == [
        JobStatus.queued,
        JobStatus.succeeded,
        JobStatus.running,
    ]
