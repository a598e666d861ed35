"""200 clients submit at once onto eight busy devices with queueing, against a real API server and
a real scheduler; a finisher ends each job once it is placed, as a worker would. Every job gets
its devices in the end, and no two jobs ever held one device at overlapping times (the history
of the allocation table: acquired_at to released_at)."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import httpx
import redis
from harness import TEST_NODE, auth_headers, live_server, make_job
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import transaction
from gpudeck.models import JobStatus
from gpudeck.scheduler.service import Scheduler
from gpudeck.services.jobs import state as job_state

CLIENTS = 200


def _body(rng: random.Random) -> dict[str, Any]:
    config = {"steps": 10, "batch_size": 64}
    if rng.random() < 0.3:
        size = rng.choice([1, 2])
        return {"kind": "sae", "config": {**config, "batch_size": 64 * size}, "count": size}
    indices = rng.sample(range(8), rng.choice([1, 2, 3]))
    return {
        "kind": "sae",
        "config": {**config, "batch_size": 64 * len(indices)},
        "devices": [{"index": i, "node": TEST_NODE} for i in indices],
    }


async def _submit_all(url: str, token: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(
        base_url=url, limits=limits, timeout=60, headers=auth_headers(token)
    ) as client:
        return await asyncio.gather(*(client.post("/api/jobs", json=b) for b in bodies))


def _finish_placed(sessions: sessionmaker[Session], stop: threading.Event) -> None:
    """What a worker does, minus the ranks: placed jobs start, then end a moment later."""
    while not stop.wait(0.02):
        with transaction(sessions) as session:
            placed = session.execute(
                text(
                    "SELECT DISTINCT j.id FROM jobs j JOIN allocations a ON a.job_id = j.id "
                    "WHERE j.status = 'queued' AND a.released_at IS NULL"
                )
            ).all()
        # Each in a transaction begun after its allocation was seen committed, as a worker's
        # end is: a release stamped now() must not predate the allocation's acquired_at.
        for (job_id,) in placed:
            with transaction(sessions) as session:
                for target in (JobStatus.starting, JobStatus.running, JobStatus.succeeded):
                    job_state.transition(session, job_id, target)


def test_200_concurrent_submits_with_queueing_never_double_book(
    settings: Settings,
    db: Session,
    devices: str,
    admin_token: str,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    make_job(db, count=8)  # every device busy: each submit only queues
    engine: Engine = create_engine(settings.sqlalchemy_url, pool_size=2)
    stop = threading.Event()
    scheduler = threading.Thread(target=Scheduler(settings, engine, redis_client).run, args=(stop,))
    finisher = threading.Thread(target=_finish_placed, args=(session_factory, stop))
    rng = random.Random(7)
    try:
        with live_server(settings) as url:
            responses = asyncio.run(
                _submit_all(url, admin_token, [_body(rng) for _ in range(CLIENTS)])
            )
        assert [r.status_code for r in responses] == [201] * CLIENTS, [
            r.text for r in responses if r.status_code != 201
        ][:3]
        assert all(r.json()["devices"] == [] for r in responses)  # all busy: all wait
        # Job 1 ends before the finisher starts: the finisher would otherwise take it as
        # placed and try to start a job this test has just marked succeeded.
        db.execute(text("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE id = 1"))
        db.execute(text("UPDATE allocations SET released_at = now() WHERE job_id = 1"))
        db.commit()
        scheduler.start()
        finisher.start()
        db.execute(text("SELECT pg_notify('gpudeck_scheduler', '')"))
        db.commit()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            db.rollback()
            left = db.execute(text("SELECT count(*) FROM jobs WHERE status <> 'succeeded'"))
            if left.scalar_one() == 0:
                break
            time.sleep(0.2)
    finally:
        stop.set()
        for thread in (scheduler, finisher):
            if thread.is_alive():
                thread.join()
        engine.dispose()
    db.rollback()
    assert db.execute(text("SELECT count(*) FROM jobs WHERE status <> 'succeeded'")).scalar() == 0
    overlaps = db.execute(
        text(
            "SELECT a.job_id, b.job_id, a.gpu_uuid FROM allocations a JOIN allocations b "
            "ON a.node = b.node AND a.gpu_uuid = b.gpu_uuid AND a.id < b.id "
            "AND tstzrange(a.acquired_at, a.released_at) && tstzrange(b.acquired_at, b.released_at)"
        )
    ).all()
    assert overlaps == []
    placed = db.execute(text("SELECT count(DISTINCT job_id) FROM allocations")).scalar()
    assert placed == CLIENTS + 1
