"""The relay keeps what the database did not take, within a bound, and records it once."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
import redis
from harness import make_job
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.models import JobMetric
from gpudeck.services.jobs.events import job_stream
from gpudeck.worker import relay as relay_module
from gpudeck.worker.relay import EventRelay


def _metrics_event(client: redis.Redis, job_id: int, step: int) -> None:
    data = {"step": step, "metrics": {"loss": 1.0 / step}}
    fields = {
        "type": "metrics",
        "job_id": str(job_id),
        "rank": "0",
        "ts": "0",
        "data": json.dumps(data),
    }
    client.xadd(job_stream(job_id), fields)  # type: ignore[arg-type]


def _steps(db: Session, job_id: int) -> list[int]:
    db.expire_all()
    rows = db.scalars(
        select(JobMetric.step).where(JobMetric.job_id == job_id).order_by(JobMetric.step)
    )
    return list(rows)


def test_an_unreachable_database_delays_rows_and_drops_only_above_the_bound(
    db: Session,
    devices: str,
    session_factory: sessionmaker[Session],
    redis_client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(relay_module, "MAX_PENDING_METRICS", 10)
    monkeypatch.setattr(relay_module, "FLUSH_INTERVAL_S", 0.05)
    job = make_job(db, devices=[0])
    nowhere = make_engine("postgresql+psycopg://postgres@127.0.0.1:9/none", pool_size=1)
    relay = EventRelay(
        job.id, redis_client, make_sessionmaker(nowhere), tmp_path, tmp_path, world_size=1
    )
    for step in range(1, 26):
        _metrics_event(redis_client, job.id, step)
    _metrics_event(redis_client, job.id, 20)  # a rank's re-sent event: recorded once
    relay.pump()
    time.sleep(0.5)  # several failed writes, none of which loses a row below the bound
    assert _steps(db, job.id) == []

    relay.factory = session_factory  # the database is back
    with caplog.at_level(logging.ERROR, logger="gpudeck.worker.relay"):
        relay.drain()
    nowhere.dispose()
    assert _steps(db, job.id) == list(range(16, 26))
    assert "15 metric rows (steps 1..15) were dropped" in caplog.text


def test_a_line_longer_than_a_read_never_stalls_the_live_log(
    db: Session,
    devices: str,
    session_factory: sessionmaker[Session],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    job = make_job(db, devices=[0])
    relay = EventRelay(job.id, redis_client, session_factory, tmp_path, tmp_path, world_size=1)
    long_line = "z" * (relay_module.LOG_READ_BYTES + 10)
    (tmp_path / "rank0.log").write_text(f"before\n{long_line}\nafter\n")
    for _ in range(3):  # one pass used to stop at the long line, and every later one too
        relay._forward_logs()
    relay.drain()
    entries = redis_client.xrange(job_stream(job.id))
    messages = [json.loads(fields["data"])["message"] for _, fields in entries]
    assert messages[0] == "before" and messages[-1] == "after"
    assert all(len(m) < relay_module.LOG_LINE_CHARS + 100 for m in messages)
    assert any("characters cut" in m for m in messages)


def test_a_run_that_redoes_steps_an_earlier_run_recorded_keeps_one_point_a_step(
    db: Session,
    devices: str,
    session_factory: sessionmaker[Session],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    """A preempted (or requeued) job resumes from its newest checkpoint, which may be older
    than its last metric point: the steps it redoes are not recorded twice (the clean-clone
    CI saw step 61 twice in a preempted job's curve under load)."""
    job = make_job(db, devices=[0])
    first = EventRelay(job.id, redis_client, session_factory, tmp_path, tmp_path, world_size=1)
    for step in range(1, 62):
        _metrics_event(redis_client, job.id, step)
    first.pump()
    first.drain()
    redis_client.delete(job_stream(job.id))  # the next run starts a fresh stream
    again = EventRelay(job.id, redis_client, session_factory, tmp_path, tmp_path, world_size=1)
    for step in range(58, 70):  # resumed from its checkpoint at step 57
        _metrics_event(redis_client, job.id, step)
    again.pump()
    again.drain()
    assert _steps(db, job.id) == list(range(1, 70))
