"""Fixtures over real PostgreSQL and Redis (see harness.py for where they come from)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import torch
from fastapi.testclient import TestClient
from harness import (
    TEST_NODE,
    auth_headers,
    create_token,
    register_devices,
    resolve_services,
    truncate_all,
)
from saelens_check import SaeLens
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core import migrate
from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.main import create_app
from gpudeck.scheduler.duties import Context
from gpudeck.scheduler.service import Scheduler


def pytest_configure(config: pytest.Config) -> None:
    """One CPU thread for torch in each test process and what it starts (unless set): three
    test processes share two cores, and torch's default of a thread a core made each spin
    waiting for the others at every op (tests/kinds: 153 -> 129 s of CPU with 3 workers on
    this 2-core machine, more under the whole suite's load). Ranks set their own from the
    launch contract whatever this says."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    # The tests' figures are written for their 8 GiB simulated devices with a 500 MiB CUDA
    # context reserve, as a lab sets it for its GPU model; the product's default is the
    # figure measured on an H200 (core/config.py), which would leave such a device one share.
    os.environ.setdefault("GPUDECK_CUDA_CONTEXT_RESERVE_BYTES", str(500 * 1024**2))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first: a long test collected last would keep one worker busy alone."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # a stable sort


# Threads that act for one job id: its relay's writer, its Slurm follower, its log shipper (and
# the Slurm executor's pass, which starts followers), an SAE rank's batch prefetcher.
JOB_THREADS = ("gpudeck-relay-", "gpudeck-slurm-", "gpudeck-logs-", "gpudeck-prefetch-")


@pytest.fixture(autouse=True)
def no_job_thread_outlives_its_test() -> Iterator[None]:
    """Job ids start at 1 again in every test (the tables are truncated), so a follower or relay
    that one test leaves running records a later test's job's events as its own: the CI once
    saw a preempted job's steps twice, and a relay test found rows its own relay never wrote."""
    before = set(threading.enumerate())
    yield
    left = sorted(
        t.name for t in threading.enumerate() if t.name.startswith(JOB_THREADS) and t not in before
    )
    if left:
        pytest.fail(f"the test left job threads running: {', '.join(left)}")


@pytest.fixture(scope="session")
def sae_lens() -> Iterator[SaeLens]:
    """The real SAELens, one process for the whole session, started by the first check: a
    Python of its own per check spent ~5 s of CPU importing sae_lens and transformers."""
    server = SaeLens()
    yield server
    server.close()


@pytest.fixture(scope="session")
def service_urls() -> Iterator[tuple[str, str]]:
    database_url, redis_url, embedded = resolve_services()
    try:
        yield database_url, redis_url
    finally:
        embedded.stop()


@pytest.fixture(scope="session")
def migrated_engine(service_urls: tuple[str, str]) -> Iterator[Engine]:
    """The schema comes from the Alembic migrations, as in production (no create_all)."""
    engine = make_engine(service_urls[0], pool_size=5)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    migrate.upgrade(service_urls[0])
    yield engine
    engine.dispose()


@pytest.fixture
def session_factory(migrated_engine: Engine) -> Iterator[sessionmaker[Session]]:
    factory = make_sessionmaker(migrated_engine)
    yield factory
    with factory() as session:
        truncate_all(session)


@pytest.fixture
def db(session_factory: sessionmaker[Session]) -> Iterator[Session]:
    with session_factory() as session:
        yield session


@pytest.fixture
def devices(db: Session) -> str:
    """Eight simulated 80 GiB devices on the test node; returns the node name."""
    register_devices(db)
    return TEST_NODE


@pytest.fixture
def redis_client(service_urls: tuple[str, str]) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(service_urls[1], decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def settings(service_urls: tuple[str, str], tmp_path: Path, migrated_engine: Engine) -> Settings:
    return Settings(
        database_url=service_urls[0],
        redis_url=service_urls[1],
        data_dir=tmp_path / "data",
        node_name=TEST_NODE,
        device_provider="simulated",
        simulated_devices="8x80GiB",
        allowed_hosts="testserver",  # TestClient's Host header
    )


@pytest.fixture
def admin_token(session_factory: sessionmaker[Session]) -> str:
    """A token for user `admin` (role admin). `client` sends it; live servers take it from here."""
    return create_token(session_factory, "admin")


@pytest.fixture
def client(
    settings: Settings, session_factory: sessionmaker[Session], admin_token: str
) -> Iterator[TestClient]:
    """Signed in as `admin` (send other headers per request to act as someone else)."""
    with TestClient(create_app(settings), headers=auth_headers(admin_token)) as test_client:
        yield test_client


@pytest.fixture
def scheduler(settings: Settings, redis_client: redis.Redis) -> Iterator[Context]:
    """The scheduler's context, for a test that runs its passes itself (schedule_queue)."""
    engine = create_engine(settings.sqlalchemy_url, pool_size=2)
    try:
        yield Scheduler(settings, engine, redis_client).ctx
    finally:
        engine.dispose()
