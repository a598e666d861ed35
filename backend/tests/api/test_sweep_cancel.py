"""A sweep's cancel ends its waiting members together (one UPDATE and one scheduler wake-up,
whatever their number), asks its running ones to stop as a single cancel does, audits each
member, and races the real scheduler and a worker's claim without leaving a member running
un-asked or a device held by an ended member."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient
from harness import TEST_NODE, statements_run
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import transaction
from gpudeck.models import JobStatus
from gpudeck.scheduler.duties import schedule_queue
from gpudeck.scheduler.service import Scheduler
from gpudeck.services.jobs import state as job_state
from gpudeck.services.runs import lifecycle as runs

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}
ENDED = {s.value for s in job_state.TERMINAL}


def sweep_of(client: TestClient, members: int, max_parallel: int) -> dict[str, object]:
    body = {
        "name": "seeds",
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"grid": {"seed": list(range(members))}},
        "max_parallel": max_parallel,
    }
    created = client.post("/api/sweeps", json=body)
    assert created.status_code == 201, created.text
    return created.json()  # type: ignore[no-any-return]


def live_allocations(db: Session) -> dict[int, int]:
    """Devices still held, by job."""
    db.rollback()
    rows = db.execute(
        text("SELECT job_id, count(*) FROM allocations WHERE released_at IS NULL GROUP BY job_id")
    )
    return {job_id: n for job_id, n in rows}


@pytest.fixture
def scheduler(settings: Settings, redis_client: redis.Redis) -> Iterator[Scheduler]:
    engine = create_engine(settings.sqlalchemy_url, pool_size=2)
    try:
        yield Scheduler(settings, engine, redis_client)
    finally:
        engine.dispose()


def test_waiting_members_end_in_one_statement_and_running_ones_are_asked_to_stop(
    client: TestClient, db: Session, devices: str, scheduler: Scheduler
) -> None:
    sweep = sweep_of(client, members=12, max_parallel=2)
    ids = [m["job_id"] for m in sweep["members"]]  # type: ignore[attr-defined]
    assert schedule_queue(scheduler.ctx) == ids[:2]  # both placed; member 0's worker claims it
    with Session(db.get_bind()) as session:
        assert runs.claim_job(session, ids[0], TEST_NODE) is not None
        assert runs.mark_running(session, ids[0])
        session.commit()
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with statements_run(engine) as statements:
        answer = client.post(f"/api/sweeps/{sweep['id']}/cancel")
    assert answer.status_code == 200, answer.text
    done = answer.json()
    # 10 waiting and member 1, placed but not claimed by a worker: no process of theirs runs
    assert (done["cancelled"], done["stopping"]) == (11, 1)
    assert done["counts"] == {"cancelled": 11, "running": 1}
    writes = [s for s in statements if s.lstrip().upper().startswith("UPDATE JOBS")]
    assert len(writes) == 2, writes  # the waiting members' end; the running one's stop request
    assert sum("pg_notify" in s for s in statements) == 1
    # Member 1's devices are free at once; member 0 keeps its own until its worker ends it.
    assert live_allocations(db) == {ids[0]: 1}
    running = client.get(f"/api/jobs/{ids[0]}").json()
    assert running["status"] == "running" and running["cancel_requested"]
    with Session(db.get_bind()) as session:  # its worker stops it after its final checkpoint
        assert runs.finish_job(session, ids[0], JobStatus.cancelled) is not None
        session.commit()
    assert live_allocations(db) == {}
    audited = db.execute(
        text("SELECT target FROM audit_events WHERE action = 'job.cancel' ORDER BY target")
    ).scalars()
    assert sorted(audited) == sorted(f"job:{i}" for i in ids)
    again = client.post(f"/api/sweeps/{sweep['id']}/cancel").json()
    assert (again["cancelled"], again["stopping"]) == (0, 0)
    assert again["counts"] == {"cancelled": 12}


def test_three_sweeps_of_many_members_cancel_with_the_same_statements(
    client: TestClient, db: Session, devices: str
) -> None:
    """The statements a cancel sends do not grow with the sweep (the single cancel's loop sent
    a few per member)."""
    engine = client.app.state.engine  # type: ignore[attr-defined]
    sent = []
    for members in (3, 60, 300):
        sweep = sweep_of(client, members=members, max_parallel=4)
        with statements_run(engine) as statements:
            done = client.post(f"/api/sweeps/{sweep['id']}/cancel").json()
        assert done["cancelled"] == members and done["counts"] == {"cancelled": members}
        sent.append(len(statements))
    assert sent[0] == sent[1] == sent[2], sent


def _work(sessions: sessionmaker[Session], stop: threading.Event, rng: random.Random) -> None:
    """What a worker does, minus the ranks: it claims placed members (the real claim), runs
    them briefly, and ends one asked to stop as cancelled (after its final checkpoint)."""
    while not stop.wait(0.002):
        with transaction(sessions) as session:
            rows = session.execute(
                text(
                    "SELECT j.id, j.status, j.cancel_requested_at IS NOT NULL FROM jobs j "
                    "WHERE j.status IN ('starting', 'running') OR (j.status = 'queued' AND "
                    "EXISTS (SELECT 1 FROM allocations a WHERE a.job_id = j.id "
                    "AND a.released_at IS NULL))"
                )
            ).all()
        for job_id, status, asked in rows:
            with transaction(sessions) as session:
                if status == "queued":
                    if runs.claim_job(session, job_id, TEST_NODE) is not None:
                        runs.mark_running(session, job_id)
                elif asked:
                    runs.finish_job(session, job_id, JobStatus.cancelled)
                elif rng.random() < 0.02:  # a member ends on its own now and then
                    runs.finish_job(session, job_id, JobStatus.succeeded)


def _wait_all_ended(db: Session, sweep_id: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        db.rollback()
        left = db.execute(
            text("SELECT count(*) FROM jobs WHERE sweep_id = :s AND status <> ALL(:ended)"),
            {"s": sweep_id, "ended": sorted(ENDED)},
        ).scalar_one()
        if left == 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"sweep {sweep_id}: members still not ended")


@pytest.mark.long
def test_a_cancel_racing_the_scheduler_and_claims_leaves_no_member_running_or_holding(
    client: TestClient,
    db: Session,
    devices: str,
    scheduler: Scheduler,
    session_factory: sessionmaker[Session],
) -> None:
    """Members are placed by the real scheduler and claimed by a worker's real claim while the
    cancel runs: each ends cancelled while waiting (its devices freed in the cancel) or is
    asked to stop and ended by its worker, never left running un-asked nor holding devices."""
    stop = threading.Event()
    rng = random.Random(33)
    threads = [
        threading.Thread(target=scheduler.run, args=(stop,)),
        threading.Thread(target=_work, args=(session_factory, stop, random.Random(5))),
    ]
    for thread in threads:
        thread.start()
    try:
        for _ in range(6):
            sweep = sweep_of(client, members=80, max_parallel=8)
            time.sleep(rng.uniform(0.0, 0.5))  # somewhere in the stream of starts
            done = client.post(f"/api/sweeps/{sweep['id']}/cancel").json()
            assert "queued" not in done["counts"], done["counts"]
            for member in done["members"]:
                if member["status"] not in ENDED:
                    job = client.get(f"/api/jobs/{member['job_id']}").json()
                    assert job["cancel_requested"], job
            held_by_ended = db.execute(
                text(
                    "SELECT a.job_id FROM allocations a JOIN jobs j ON j.id = a.job_id "
                    "WHERE a.released_at IS NULL AND j.status = ANY(:ended)"
                ),
                {"ended": sorted(ENDED)},
            ).all()
            assert held_by_ended == []
            _wait_all_ended(db, int(sweep["id"]))  # type: ignore[call-overload]
            assert live_allocations(db) == {}
            statuses = db.execute(
                text("SELECT DISTINCT status FROM jobs WHERE sweep_id = :s"), {"s": sweep["id"]}
            ).scalars()
            assert set(statuses) <= {"cancelled", "succeeded"}
    finally:
        stop.set()
        for thread in threads:
            thread.join()
