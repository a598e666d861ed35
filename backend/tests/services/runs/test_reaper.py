"""services/runs/reaper: active jobs whose worker stopped heartbeating are `lost` and their
devices freed, once however many reapers run, never while contact with the database was broken,
and with an error that names the silent node and the lease."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from harness import TEST_NODE, make_job
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.engine.launch import Launcher
from gpudeck.models import Allocation, JobStatus
from gpudeck.services.jobs import lookup
from gpudeck.services.runs import lifecycle, reaper
from gpudeck.worker.runtime import WorkerRuntime


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


def test_a_worker_frozen_inside_its_heartbeat_holds_its_job_for_at_most_the_bound(
    db: Session, devices: str, settings: Settings, session_factory: sessionmaker[Session]
) -> None:
    """A hung machine: its worker stopped (SIGSTOP) between its heartbeat's UPDATE and the
    commit holds the job's row lock. The reaper skips locked rows, so before the bound the job
    stayed `running` for as long as the machine stayed frozen (seen: a multi-node job whose
    second node was frozen, never lost in 64 s). Postgres ends such a session after the
    worker's bound, and the job is reaped."""
    job = make_job(db, devices=[0], status=JobStatus.running)
    silent_for(db, job.id, 90)
    frozen_engine = make_engine(settings.sqlalchemy_url, pool_size=1, idle_in_transaction_s=1.0)
    try:
        frozen = make_sessionmaker(frozen_engine)()
        assert job.id in lifecycle.heartbeat(frozen, [job.id])  # locked, never committed
        with session_factory() as reaping:
            assert reaper.reap_lost(reaping, lease_s=30) == []  # held: skipped
            reaping.commit()
        deadline = time.monotonic() + 10
        while True:
            with session_factory() as reaping:
                reaped = reaper.reap_lost(reaping, lease_s=30)
                reaping.commit()
            if reaped or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert reaped == [job.id]
        with pytest.raises(DBAPIError) as ended:  # its session was ended, its update undone
            frozen.commit()
        assert ended.value.connection_invalidated  # a store outage to the worker's retry
    finally:
        frozen_engine.dispose()
    db.expire_all()
    assert lookup.get_job(db, job.id).status == JobStatus.lost


def idle_bound(engine: Engine) -> str:
    with engine.connect() as conn:
        return str(conn.scalar(text("SHOW idle_in_transaction_session_timeout")))


def test_the_worker_and_the_api_hold_a_transaction_idle_for_at_most_a_lease(
    settings: Settings, client: TestClient
) -> None:
    """The two that lock job rows for a node (the scheduler and sampler build theirs alike)."""
    lease = f"{settings.heartbeat_lease_s:g}s"
    runtime = WorkerRuntime(settings, launcher=Launcher())
    try:
        assert idle_bound(runtime.engine) == lease
    finally:
        runtime.engine.dispose()
    assert idle_bound(client.app.state.engine) == lease  # type: ignore[attr-defined]
