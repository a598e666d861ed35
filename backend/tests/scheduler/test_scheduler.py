"""`gpudeck scheduler`: one leader at a time (advisory lock), a standby takes over, and the
reaper never counts a database outage as workers' missed heartbeats."""

from __future__ import annotations

import threading

import pytest
import redis
from harness import TEST_NODE, make_job
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session

from gpudeck.core.celery_app import node_queue
from gpudeck.core.config import Settings
from gpudeck.models import JobStatus
from gpudeck.scheduler.contact import Contact
from gpudeck.scheduler.duties import reap_lost_jobs
from gpudeck.scheduler.service import Scheduler
from gpudeck.services.jobs import lookup


def _stale(db: Session, job_id: int, seconds: int = 60) -> None:
    db.execute(
        text("UPDATE jobs SET heartbeat_at = now() - make_interval(secs => :s) WHERE id = :i"),
        {"s": seconds, "i": job_id},
    )
    db.commit()


def _engine(settings: Settings) -> Engine:
    return create_engine(settings.sqlalchemy_url, pool_size=2, pool_pre_ping=True)


def test_one_leader_and_a_standby_takes_over(settings: Settings, redis_client: redis.Redis) -> None:
    first_engine, second_engine = _engine(settings), _engine(settings)
    try:
        first = Scheduler(settings, first_engine, redis_client)
        second = Scheduler(settings, second_engine, redis_client)
        assert first.tick() is True
        assert second.tick() is False and second.tick() is False  # stands by
        first.leadership.release()  # as when it stops (a death ends its session: the same)
        assert second.tick() is True
        assert first.tick() is False
    finally:
        first.leadership.release()
        second.leadership.release()
        first_engine.dispose()
        second_engine.dispose()


def test_reaps_only_after_a_lease_of_unbroken_contact(
    settings: Settings, db: Session, devices: str, redis_client: redis.Redis
) -> None:
    settings.heartbeat_interval_s, settings.heartbeat_lease_s = 1.0, 5.0
    job = make_job(db, devices=[0], status=JobStatus.running)
    _stale(db, job.id)
    engine = _engine(settings)
    try:
        scheduler = Scheduler(settings, engine, redis_client)
        contact: Contact = scheduler.ctx.contact
        contact.ok(sent_at=100.0, now=100.1)
        contact.ok(sent_at=101.0, now=101.1)  # 1 s of contact: not a lease yet
        assert contact.unbroken_s(now=101.2) < settings.heartbeat_lease_s
        assert reap_lost_jobs(scheduler.ctx) == []
        db.expire_all()
        assert lookup.get_job(db, job.id).status == JobStatus.running
    finally:
        engine.dispose()


def test_contact_breaks_on_a_late_probe_a_gap_or_a_failure() -> None:
    contact = Contact(max_gap_s=2.0)
    for t in range(10):
        contact.ok(sent_at=float(t), now=t + 0.1)
    assert contact.unbroken_s(now=9.2) == 9.0
    contact.ok(sent_at=10.0, now=20.0)  # a paused server answered 10 s late
    assert contact.unbroken_s(now=20.1) == 0.0
    contact.ok(sent_at=21.0, now=21.1)
    assert contact.unbroken_s(now=21.2) == pytest.approx(1.1)
    contact.ok(sent_at=30.0, now=30.1)  # this process itself was stopped for 9 s
    assert contact.unbroken_s(now=30.2) == 0.0
    contact.lost()
    assert contact.unbroken_s(now=30.3) == 0.0
    contact.ok(sent_at=31.0, now=31.1)
    assert contact.unbroken_s(now=40.0) == 0.0  # no probe answered for too long


def test_leader_reaps_a_stale_job_once_in_contact(
    settings: Settings, db: Session, devices: str, redis_client: redis.Redis
) -> None:
    settings.heartbeat_interval_s, settings.heartbeat_lease_s = 0.2, 1.0
    job = make_job(db, devices=[0], status=JobStatus.running)
    _stale(db, job.id)
    engine = _engine(settings)
    stop = threading.Event()
    scheduler = Scheduler(settings, engine, redis_client)
    runner = threading.Thread(target=scheduler.run, args=(stop,))
    runner.start()
    try:
        for _ in range(100):
            db.expire_all()
            if lookup.get_job(db, job.id).status == JobStatus.lost:
                break
            stop.wait(0.1)
        assert lookup.get_job(db, job.id).status == JobStatus.lost
    finally:
        stop.set()
        runner.join()
        engine.dispose()


def test_leader_dispatches_a_job_the_broker_never_took(
    settings: Settings, db: Session, devices: str, redis_client: redis.Redis
) -> None:
    """The outbox duty: a job accepted while Redis was down (dispatched_at empty) reaches its
    node's queue once the scheduler runs, without any worker restart."""
    job = make_job(db, devices=[0])
    db.execute(text("UPDATE jobs SET created_at = now() - interval '1 minute'"))
    db.commit()
    engine = _engine(settings)
    stop = threading.Event()
    runner = threading.Thread(target=Scheduler(settings, engine, redis_client).run, args=(stop,))
    runner.start()
    try:
        # The message reaches Redis before the scheduler's pass commits `dispatched_at`, so
        # the test waits for the commit, not for the message alone.
        for _ in range(100):
            db.expire_all()
            if lookup.get_job(db, job.id).dispatched_at is not None:
                break
            stop.wait(0.1)
        assert lookup.get_job(db, job.id).dispatched_at is not None
        assert redis_client.llen(node_queue(TEST_NODE)) == 1
    finally:
        stop.set()
        runner.join()
        engine.dispose()
