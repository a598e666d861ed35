"""End-to-end fixtures: a real `gpudeck worker` subprocess on the test database and Redis."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from harness import TEST_NODE, register_devices
from sqlalchemy import func, update
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.engine import kinds
from gpudeck.models import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))  # e2e_kinds and e2e_helpers
from e2e_helpers import WorkerProcess, spawn_part, worker_env


@pytest.fixture
def e2e_kinds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's kind registry with the test kinds of e2e_kinds.py (the in-process API
    validates their configs), forgotten again after the test."""
    monkeypatch.setenv(kinds.KIND_MODULES_ENV, "e2e_kinds")
    kinds.registry.cache_clear()
    yield
    kinds.registry.cache_clear()


@pytest.fixture
def e2e_settings(settings: Settings, e2e_kinds: None) -> Settings:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return settings


@pytest.fixture
def start_worker(
    e2e_settings: Settings, redis_client: redis.Redis, tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(**overrides: str) -> WorkerProcess:
        worker = spawn_part(
            ["worker", "--concurrency", "4"],
            worker_env(e2e_settings, **overrides),
            tmp_path / f"worker{len(started)}.log",
        )
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        worker.stop(timeout_s=60)


@pytest.fixture
def start_scheduler(
    e2e_settings: Settings, tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    """`gpudeck scheduler` processes (the reaper's home); the first one started leads."""
    started: list[WorkerProcess] = []

    def start(**overrides: str) -> WorkerProcess:
        scheduler = spawn_part(
            ["scheduler"],
            worker_env(e2e_settings, **overrides),
            tmp_path / f"scheduler{len(started)}.log",
        )
        started.append(scheduler)
        return scheduler

    yield start
    for scheduler in started:
        scheduler.stop(timeout_s=30)


class NodeReports(threading.Thread):
    """The test node reports every few seconds, as its sampler would: a test longer than the
    offline threshold (90 s, easily reached by a long test on a loaded machine) must not find
    its own node offline and its devices refused."""

    def __init__(self, sessions: sessionmaker[Session], node: str, every_s: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.sessions, self.node, self.every_s = sessions, node, every_s
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            with self.sessions() as session:
                session.execute(
                    update(Node).where(Node.name == self.node).values(last_seen_at=func.now())
                )
                session.commit()


@pytest.fixture
def api(
    client: TestClient,
    db: Session,
    e2e_settings: Settings,
    session_factory: sessionmaker[Session],
) -> Iterator[TestClient]:
    """The API (signed in as admin) on a node with eight simulated devices, online for as
    long as the test runs."""
    register_devices(db)
    reports = NodeReports(session_factory, TEST_NODE)
    reports.start()
    yield client
    reports.stopped.set()
    reports.join()
