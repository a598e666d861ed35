"""A store that is down or paused is a 503 naming it within ~2 s, never a 500 or a hang, and
the API recovers by itself when the store returns. Real servers, stopped and paused for real."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient
from harness import TEST_NODE, auth_headers, create_token, register_devices
from sqlalchemy import text
from stores import PostgresStore, RedisStore, remove_root, temp_root

from gpudeck.core import migrate
from gpudeck.core.celery_app import make_celery, node_queue
from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.core.redis import BREAKER_OPEN_S
from gpudeck.main import create_app
from gpudeck.services.jobs import events as job_events
from gpudeck.services.queue.dispatch import redispatch_pending

# The API's bounds: a 0.5 s ping of a pooled connection, a 2 s connect (libpq's minimum).
WITHIN_S = 2.5


@pytest.fixture(scope="module")
def stores() -> Iterator[tuple[PostgresStore, RedisStore]]:
    root = temp_root()
    pg, rd = PostgresStore(root), RedisStore(root)
    try:
        pg.start()
        rd.start()
        migrate.upgrade(pg.url)
        engine = make_engine(pg.url, pool_size=1)
        with make_sessionmaker(engine)() as session:
            register_devices(session)
        engine.dispose()
        yield pg, rd
    finally:
        rd.stop()
        pg.stop()
        remove_root(root)


@pytest.fixture
def api(stores: tuple[PostgresStore, RedisStore], tmp_path: Path) -> Iterator[TestClient]:
    pg, rd = stores
    pg.start() if pg.process is None else None
    rd.start() if rd.process is None else None
    settings = Settings(
        database_url=pg.url,
        redis_url=rd.url,
        data_dir=tmp_path / "data",
        node_name=TEST_NODE,
        device_provider="simulated",
        simulated_devices="8x80GiB",
        allowed_hosts="testserver",
    )
    token = create_token(pg.url, "admin")
    with TestClient(create_app(settings), headers=auth_headers(token)) as client:
        assert client.get("/api/jobs").status_code == 200  # warm: the pool holds a connection
        yield client
    pg.resume()
    rd.resume()


def timed(client: TestClient, path: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = client.get(path)
    return response, time.monotonic() - started


def assert_unavailable(response: httpx.Response, elapsed_s: float, store: str) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
    detail = response.json()["detail"]
    assert detail["code"] == f"{store}_unavailable"
    assert f"{store} unavailable" in detail["message"]
    assert elapsed_s < WITHIN_S, elapsed_s


@pytest.mark.parametrize("path", ["/api/jobs", "/api/gpus", "/api/auth/me"])
def test_database_stopped_is_503_then_recovers(
    api: TestClient, stores: tuple[PostgresStore, RedisStore], path: str
) -> None:
    pg, _ = stores
    pg.stop()
    for _ in range(2):  # the pooled connection's failure, then a fresh connect's
        assert_unavailable(*timed(api, path), "database")
    pg.start()
    assert api.get(path).status_code == 200


def test_database_paused_is_503_within_bound_then_recovers(
    api: TestClient, stores: tuple[PostgresStore, RedisStore]
) -> None:
    pg, _ = stores
    pg.pause()
    try:
        for _ in range(2):  # a pooled connection that does not answer, then a connect
            assert_unavailable(*timed(api, "/api/jobs"), "database")
    finally:
        pg.resume()
    assert api.get("/api/jobs").status_code == 200


def assert_back_within(api: TestClient, path: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while (status := api.get(path).status_code) != 200:
        assert status == 503 and time.monotonic() < deadline, status
        time.sleep(0.1)


def test_redis_stopped_is_503_then_recovers(
    api: TestClient, stores: tuple[PostgresStore, RedisStore]
) -> None:
    _, rd = stores
    rd.stop()
    assert_unavailable(*timed(api, "/api/gpus"), "redis")
    rd.start()
    assert_back_within(api, "/api/gpus", BREAKER_OPEN_S + 0.5)


def test_redis_paused_is_503_within_bound(
    api: TestClient, stores: tuple[PostgresStore, RedisStore]
) -> None:
    _, rd = stores
    rd.pause()
    try:
        assert_unavailable(*timed(api, "/api/gpus"), "redis")
    finally:
        rd.resume()
    # The stall opened the API's breaker: it tries Redis again within BREAKER_OPEN_S.
    assert_back_within(api, "/api/gpus", BREAKER_OPEN_S + 0.5)


def test_job_accepted_while_redis_down_is_dispatched_when_it_returns(
    api: TestClient, stores: tuple[PostgresStore, RedisStore]
) -> None:
    pg, rd = stores
    rd.stop()
    started = time.monotonic()
    response = api.post("/api/jobs", json={"kind": "sae", "config": {"steps": 5}, "count": 1})
    assert response.status_code == 201, response.text  # accepted: the job row is the truth
    assert time.monotonic() - started < WITHIN_S * 2
    job_id = response.json()["id"]
    rd.start()
    engine = make_engine(pg.url, pool_size=1)
    with make_sessionmaker(engine)() as session:
        session.execute(text("UPDATE jobs SET created_at = now() - interval '1 minute'"))
        assert redispatch_pending(session, make_celery(api.app.state.settings)) == [job_id]
        session.commit()
    engine.dispose()
    with redis.Redis.from_url(rd.url) as client:
        assert client.llen(node_queue(TEST_NODE)) == 1


def test_telemetry_feed_says_unavailable_and_resumes_by_itself(
    api: TestClient, stores: tuple[PostgresStore, RedisStore]
) -> None:
    _, rd = stores
    with api.websocket_connect("/ws/telemetry") as ws:
        assert ws.receive_json()["type"] == "snapshot"
        rd.stop()
        down = ws.receive_json()
        assert down["type"] == "unavailable"
        assert "telemetry unavailable" in down["message"]
        rd.start()
        assert ws.receive_json()["type"] == "available"


def test_job_feed_says_unavailable_and_resumes_by_itself(
    api: TestClient, stores: tuple[PostgresStore, RedisStore]
) -> None:
    _, rd = stores
    job = api.post("/api/jobs", json={"kind": "sae", "config": {"steps": 5}, "count": 1}).json()
    with api.websocket_connect(f"/ws/jobs/{job['id']}") as ws:
        assert ws.receive_json()["type"] == "snapshot"
        rd.stop()
        down = ws.receive_json()
        assert down["type"] == "unavailable"
        assert "job feed unavailable" in down["data"]["message"]
        rd.start()
        assert ws.receive_json()["type"] == "available"
        with redis.Redis.from_url(rd.url) as client:
            event = {"type": "log", "rank": "1", "ts": "1.5", "data": '{"line": "back"}'}
            client.xadd(job_events.job_stream(job["id"]), event)  # type: ignore[arg-type]
        frame = ws.receive_json()
        assert (frame["type"], frame["rank"], frame["data"]) == ("log", 1, {"line": "back"})
