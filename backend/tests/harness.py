"""Shared test helpers: where the services are, a live API server, factories.

Services: GPUDECK_TEST_DATABASE_URL / GPUDECK_TEST_REDIS_URL when set; else the local servers at
127.0.0.1:5432 (database `test`) and 127.0.0.1:6379 when reachable; else embedded ones started
for the session under a temporary directory. Under `pytest -n` each xdist worker takes a database
and a Redis database number of its own on those servers (`test_gw0`, db 1; `test_gw1`, db 2...).
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import Base, make_engine, make_sessionmaker
from gpudeck.core.embedded import EmbeddedServices
from gpudeck.main import create_app
from gpudeck.models import Job, JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.accounts import users as user_service
from gpudeck.services.cluster.inventory import upsert_inventory
from gpudeck.services.submit import submission
from gpudeck.telemetry.simulated import simulated_inventory

LOCAL_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
LOCAL_REDIS_URL = "redis://127.0.0.1:6379/0"
TEST_NODE = "testnode"
# Every table the models define, read from them: a hand-kept list missed `sweeps` (jobs point
# at it, so no cascade from jobs reaches it), and one test's sweeps showed in the next.
TABLES = tuple(table.name for table in Base.metadata.sorted_tables)


def reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def resolve_services() -> tuple[str, str, EmbeddedServices]:
    embedded = EmbeddedServices(Path(tempfile.mkdtemp(prefix="gpudeck-test-services-")))
    database_url = os.environ.get("GPUDECK_TEST_DATABASE_URL")
    if not database_url:
        database_url = LOCAL_DATABASE_URL if reachable(5432) else embedded.start_postgres()
    redis_url = os.environ.get("GPUDECK_TEST_REDIS_URL")
    if not redis_url:
        redis_url = LOCAL_REDIS_URL if reachable(6379) else embedded.start_redis()
    slot = _claim_slot(database_url)
    database_url = _database_of_its_own(database_url, f"slot{slot}")
    redis_url = _redis_db_of_its_own(redis_url, slot + 1)
    return database_url, redis_url, embedded


# Redis has 16 databases (0 is left to `make run`): at most 15 test processes at once.
MAX_TEST_PROCESSES = 15
_SLOT_LOCK_BASE = 0x6770_6400  # advisory lock keys of the slots: "gpd" and the slot number
_held_slot: list[Connection] = []


def _claim_slot(database_url: str) -> int:
    """A slot of its own for this test process: a database and a Redis db no other process
    uses while it runs. Every test truncates every table and reads its Celery queues, so two
    processes must never share them: not two xdist workers, and not two pytest runs side by
    side on one machine (two engineers' runs, or a run beside CI), which once truncated each
    other's tokens mid-test. The slot is a session advisory lock, held on a connection kept
    open until the process exits, so a crashed run frees its slot at once."""
    conn = make_engine(database_url, pool_size=1).connect()
    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
    for slot in range(MAX_TEST_PROCESSES):
        claimed = conn.execute(
            text("SELECT pg_try_advisory_lock(:key)"), {"key": _SLOT_LOCK_BASE + slot}
        ).scalar()
        if claimed:
            _held_slot.append(conn)
            return slot
    conn.close()
    raise RuntimeError(f"more than {MAX_TEST_PROCESSES} test processes use this Postgres at once")


def _database_of_its_own(database_url: str, slot: str) -> str:
    """The slot's database, created on first use (the schema is migrated by conftest)."""
    url = make_url(database_url)
    name = f"{url.database}_{slot}"
    engine = make_engine(database_url, pool_size=1)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
            if exists.first() is None:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def _redis_db_of_its_own(redis_url: str, number: int) -> str:
    """Workers' Celery queues, streams and keys apart: a worker's jobs stay its own."""
    return urlsplit(redis_url)._replace(path=f"/{number}").geturl()


def truncate_all(session: Session) -> None:
    """Every test leaves the database as it found it (only the schema remains)."""
    session.execute(text(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
    session.commit()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def register_devices(session: Session, spec: str = "8x80GiB", node: str = TEST_NODE) -> None:
    settings_spec = Settings(simulated_devices=spec).simulated
    upsert_inventory(session, node, "simulated", simulated_inventory(settings_spec, node))
    session.commit()


def make_job(
    session: Session,
    *,
    devices: list[int] | None = None,
    count: int | None = None,
    config: dict[str, Any] | None = None,
    status: JobStatus = JobStatus.queued,
    queue: bool = False,
) -> Job:
    """A committed job holding the given device indices (or `count` picked ones); busy devices
    raise, unless `queue` (then it may wait for them, holding nothing)."""
    world_size = len(devices) if devices else int(count or 1)
    spec = JobCreate(
        kind="sae",
        config=config or {"steps": 10, "batch_size": 64 * world_size},
        devices=[{"index": i, "node": TEST_NODE} for i in devices] if devices else None,  # type: ignore[misc]
        count=count if devices is None else None,
        node=TEST_NODE if devices is None else None,
        queue=queue,
    )
    job = submission.create_job(session, spec, owner="tester")
    session.commit()
    if status is not JobStatus.queued:
        session.execute(
            text("UPDATE jobs SET status = :s WHERE id = :id"), {"s": status, "id": job.id}
        )
        session.commit()
        session.refresh(job)
    return job


def create_token(
    target: Session | sessionmaker[Session] | str, role: str = "admin", name: str | None = None
) -> str:
    """A committed user (created if missing) and a fresh API token for it; returns the token.

    `target` is a Session, a session factory, or a database URL. The user is named after the
    role unless `name` is given, so jobs it submits are owned by that name."""
    if isinstance(target, str):
        engine = make_engine(target, pool_size=1)
        try:
            return create_token(make_sessionmaker(engine), role, name)
        finally:
            engine.dispose()
    if isinstance(target, sessionmaker):
        with target() as session:
            return create_token(session, role, name)
    name = name or role
    user = target.scalar(text("SELECT id FROM users WHERE name = :n"), {"n": name})
    record = (
        target.get(user_service.User, user)
        if user
        else user_service.create_user(target, name, "admin" if role == "admin" else "user")
    )
    assert record is not None
    secret = user_service.issue_token(target, record, name="test").secret
    target.commit()
    return secret


def auth_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextmanager
def statements_run(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements `engine` sends while the block runs, in order (to count a request's
    round trips)."""
    statements: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", seen)


@contextmanager
def live_server(settings: Settings) -> Iterator[str]:
    """A real uvicorn server on a free port in a thread; yields its base URL."""
    settings = settings.model_copy(update={"port": free_port()})
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=settings.port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{settings.port}"
    deadline = time.monotonic() + 30
    with httpx.Client(timeout=1) as http:  # one client: a new one costs 26 ms of CPU a try
        while True:
            try:
                if http.get(f"{url}/api/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=15)
