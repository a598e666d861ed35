"""A running job survives a short outage of Postgres or Redis, and loses no metric row.

A real `gpudeck worker`, a paced 2-rank `faulty` job on simulated devices, and a Postgres
cluster and a redis-server of the test's own (tests/stores.py): frozen with SIGSTOP, restarted,
killed. The job must end `succeeded` with every metric step recorded exactly once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from e2e_helpers import WorkerProcess, launch_record, spawn_part, worker_env
from fastapi.testclient import TestClient
from harness import auth_headers, create_token, register_devices
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from stores import PostgresStore, RedisStore, Store, remove_root, temp_root

from gpudeck.core import migrate
from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.engine.launch import group_alive
from gpudeck.main import create_app

T = TypeVar("T")
# A `faulty` job (e2e_kinds.py): a real DDP step over gloo on each of its 2 ranks, a metric and
# a progress event every step, paced by a sleep. What the outages test is the runner and the
# relay, not an SAE's arithmetic: trained at full speed, an SAE spent ~60 CPU-seconds only to be
# running meanwhile, and its length shrank or grew with the machine's load. This one lasts at
# least STEPS x STEP_SLEEP_S = 40 s whatever the load, nearly four times what the three outages
# took from step 20 on 2 cores at load 4-5 (10.7 s, step ~200 when Redis was back), so restarts
# that a busier machine stretches still find it running; ~25 steps a second put ~25 metric rows
# in each relay flush and ~100 behind each outage.
STEPS = 1_000
STEP_SLEEP_S = 0.04
FAULTY_CONFIG: dict[str, Any] = {"steps": STEPS, "step_sleep_s": STEP_SLEEP_S}
# Four flush intervals of the relay and eight heartbeats, each a write that hangs until the
# pause ends (workers have no deadline on a paused Postgres: nothing changes past the first).
PAUSE_S = 4.0
DOWN_S = 3.0


@dataclass
class Stack:
    postgres: Store
    redis: Store
    engine: Engine
    settings: Settings
    api: TestClient
    worker: WorkerProcess

    def query(self, sql: str, **params: Any) -> list[Any]:
        """Retried while the database is away (the test's own reads, not the product's)."""

        def read() -> list[Any]:
            with self.engine.connect() as conn:
                return list(conn.execute(text(sql), params).all())

        return _retry(read)

    def progress(self, job_id: int) -> int:
        (row,) = self.query("SELECT coalesce(progress_step, 0) FROM jobs WHERE id = :id", id=job_id)
        return int(row[0])

    def wait_progress(self, job_id: int, past: int, timeout_s: float = 120) -> int:
        deadline = time.monotonic() + timeout_s
        while (step := self.progress(job_id)) <= past:
            assert time.monotonic() < deadline, f"job {job_id} stuck at step {step}"
            time.sleep(0.1)
        return step

    def wait_end(self, job_id: int, timeout_s: float = 300) -> tuple[str, str | None]:
        deadline = time.monotonic() + timeout_s
        while True:
            ((status, error),) = self.query(
                "SELECT status, error FROM jobs WHERE id = :id", id=job_id
            )
            if status in ("succeeded", "failed", "cancelled", "lost"):
                return str(status), error
            assert time.monotonic() < deadline, f"job {job_id} still {status}"
            time.sleep(0.2)

    def metric_steps(self, job_id: int) -> list[int]:
        sql = "SELECT step FROM job_metrics WHERE job_id = :id ORDER BY step"
        rows = self.query(sql, id=job_id)
        return [int(step) for (step,) in rows]


def _retry(action: Callable[[], T], timeout_s: float = 60) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except DBAPIError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture
def stack(tmp_path: Path, e2e_kinds: None) -> Iterator[Stack]:
    root = temp_root()  # not under tmp_path: pytest keeps that 0700, closed to `postgres`
    postgres, redis = PostgresStore(root), RedisStore(root)
    postgres.start()
    redis.start()
    database_url, redis_url = postgres.url, redis.url
    engine = make_engine(database_url, pool_size=2)
    worker: WorkerProcess | None = None
    try:
        migrate.upgrade(database_url)
        factory = make_sessionmaker(engine)
        with factory() as session:
            register_devices(session)
        token = create_token(factory)
        settings = Settings(
            database_url=database_url,
            redis_url=redis_url,
            data_dir=tmp_path / "data",
            node_name="testnode",
            device_provider="simulated",
            simulated_devices="8x80GiB",
            allowed_hosts="testserver",
        )
        settings.data_dir.mkdir(parents=True)
        # A lease longer than the outages: whether a reaper counts an outage as missed
        # heartbeats is the reaper's own test; this one is about the runner and the relay.
        env = worker_env(settings, GPUDECK_HEARTBEAT_LEASE_S="300")
        # Not waited for here: the test submits while it warms up (test_a_job_runs_...).
        worker = spawn_part(["worker"], env, tmp_path / "worker.log")
        with TestClient(create_app(settings), headers=auth_headers(token)) as api:
            yield Stack(postgres, redis, engine, settings, api, worker)
    finally:
        if worker is not None:
            worker.stop(timeout_s=60)
        engine.dispose()
        redis.stop()
        postgres.stop()
        remove_root(root)


def _submit(stack: Stack) -> int:
    body = {"kind": "faulty", "config": FAULTY_CONFIG, "devices": [{"index": 0}, {"index": 1}]}
    response = stack.api.post("/api/jobs", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _assert_all_steps_once(stack: Stack, job_id: int) -> None:
    status, error = stack.wait_end(job_id)
    assert status == "succeeded", f"{error}\n--- worker log:\n{stack.worker.log()[-4000:]}"
    assert stack.metric_steps(job_id) == list(range(1, STEPS + 1))
    assert stack.progress(job_id) == STEPS


@pytest.mark.long
def test_a_job_runs_through_postgres_and_redis_outages(stack: Stack) -> None:
    """One job through all three outages: a job's run is the expensive part of this test."""
    job_id = _submit(stack)  # submitted while the worker warms up
    stack.worker.wait_ready()
    stack.wait_progress(job_id, past=20)
    pgid = launch_record(stack.settings, job_id)["pgid"]

    stack.postgres.pause()  # postmaster and every backend frozen: writes hang
    time.sleep(PAUSE_S)
    assert group_alive(pgid), "the job ended during the pause; make it longer"
    stack.postgres.resume()
    step = stack.wait_progress(job_id, past=0)

    stack.postgres.stop()  # a fast shutdown: sessions cut, then connections refused
    time.sleep(DOWN_S)
    stack.postgres.start()
    assert group_alive(pgid), "the job ended during the restart; make it longer"
    step = stack.wait_progress(job_id, past=step)

    stack.redis.stop()  # no persistence: the stream and its unread events are gone
    time.sleep(DOWN_S)
    assert group_alive(pgid), "the job ended while Redis was down; make it longer"
    stack.redis.start()
    stack.wait_progress(job_id, past=step + 50)  # events flow again

    _assert_all_steps_once(stack, job_id)
    assert "store unreachable" in stack.worker.log() or "database" in stack.worker.log()
