"""The dispatch outbox: a job accepted while the broker is down is sent when it returns, once."""

from __future__ import annotations

import time

import redis
from harness import TEST_NODE, free_port, make_job
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.celery_app import make_celery, node_queue
from gpudeck.core.config import Settings
from gpudeck.models import Job, JobStatus
from gpudeck.services.queue.dispatch import dispatch_job, mark_dispatched, redispatch_pending


def queued_messages(client: redis.Redis) -> int:
    return int(client.llen(node_queue(TEST_NODE)))  # type: ignore[arg-type]


def test_job_not_dispatched_while_broker_down_is_sent_once_it_returns(
    db: Session, devices: str, redis_client: redis.Redis, service_urls: tuple[str, str]
) -> None:
    down = make_celery(
        Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", node_name=TEST_NODE)
    )
    up = make_celery(Settings(redis_url=service_urls[1], node_name=TEST_NODE))
    job = make_job(db, devices=[0])
    started = time.monotonic()
    assert not dispatch_job(down, job.id, job.node)  # the API's own attempt, broker down
    assert time.monotonic() - started < 5
    done = make_job(db, devices=[1], status=JobStatus.running)  # not queued: never sent
    sent_already = make_job(db, devices=[2])
    mark_dispatched(db, sent_already.id)
    db.commit()
    db.execute(text("UPDATE jobs SET created_at = now() - interval '10 seconds'"))
    db.commit()

    assert redispatch_pending(db, down) == []  # still down: nothing sent, nothing marked
    db.commit()
    assert db.get(Job, job.id).dispatched_at is None  # type: ignore[union-attr]

    assert redispatch_pending(db, up) == [job.id]
    db.commit()
    assert queued_messages(redis_client) == 1
    db.refresh(job)
    assert job.dispatched_at is not None
    assert redispatch_pending(db, up) == []  # idempotent: sent once
    db.commit()
    assert queued_messages(redis_client) == 1
    assert done.dispatched_at is None


def test_a_message_lost_long_ago_is_sent_again(
    db: Session, devices: str, redis_client: redis.Redis, service_urls: tuple[str, str]
) -> None:
    up = make_celery(Settings(redis_url=service_urls[1], node_name=TEST_NODE))
    job = make_job(db, devices=[0])
    db.execute(text("UPDATE jobs SET dispatched_at = now() - interval '2 minutes'"))
    db.commit()
    assert redispatch_pending(db, up, resend_after_s=60) == [job.id]
    db.commit()
    assert queued_messages(redis_client) == 1


def test_marking_a_send_never_waits_for_a_worker_claiming_the_job(
    db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    """The submit path marks its send after the commit; the worker may already hold the row."""
    job = make_job(db, devices=[0])
    with session_factory() as worker:
        worker.execute(select(Job).where(Job.id == job.id).with_for_update())  # its claim
        db.execute(text("SET LOCAL statement_timeout = '1s'"))
        started = time.monotonic()
        mark_dispatched(db, job.id)
        db.commit()
        assert time.monotonic() - started < 0.5
        worker.rollback()
    db.expire_all()
    assert db.get(Job, job.id).dispatched_at is None  # the outbox's to send again, if queued
    mark_dispatched(db, job.id)
    db.commit()
    db.expire_all()
    assert db.get(Job, job.id).dispatched_at is not None
