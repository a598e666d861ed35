"""What the executor's tests share: a connected cluster (`lab`), the executor's passes running as
the active scheduler runs them (`executor`), a small SAE config and waiting on a job."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from slurm.cluster import PARTITION, SHORT_PARTITION, SlurmCluster
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.scheduler.slurm_pass import SlurmExecutor
from gpudeck.services.submit import cluster_target

SAE_CONFIG: dict[str, Any] = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 30,
    "metrics_interval": 10,
    "checkpoint_interval": 30,
    "seed": 1,
    "dataset": {"type": "synthetic", "num_features": 32, "active_features": 3,
                "num_samples": 100_000},
}  # fmt: skip
TERMINAL = {"succeeded", "failed", "cancelled", "timeout", "lost"}


@dataclass
class PassContext:
    settings: Settings
    sessions: sessionmaker[Session]
    redis: redis.Redis


@pytest.fixture
def pass_context(
    settings: Settings, session_factory: sessionmaker[Session], redis_client: redis.Redis
) -> PassContext:
    return PassContext(settings, session_factory, redis_client)


@pytest.fixture
def executor(pass_context: PassContext) -> Iterator[SlurmExecutor]:
    """The executor's passes, every 0.3 s in a thread, as the active scheduler runs them."""
    run = SlurmExecutor()
    ctx = pass_context
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.3):
            run.run_pass(ctx)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield run
    stop.set()
    thread.join(timeout=60)
    run.join()  # its followers: stored what their ranks wrote, and stopped


@pytest.fixture
def bare_executor() -> Iterator[SlurmExecutor]:
    """An executor whose passes the test runs itself, one at a time; its followers stop after."""
    run = SlurmExecutor()
    yield run
    run.join()


@pytest.fixture
def lab(client: TestClient, slurm_cluster: SlurmCluster, settings: Settings) -> str:
    cluster_target.FACTS.forget()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    body = {
        "name": "lab", "partitions": [PARTITION, SHORT_PARTITION],
        "shared_dir": str(settings.data_dir),
        "slurm_conf": str(slurm_cluster.conf),
    }  # fmt: skip
    added = client.post("/api/clusters", json=body)
    assert added.status_code == 201, added.text
    return "lab"


def wait_job(client: TestClient, job_id: int, done: set[str], timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in done:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
